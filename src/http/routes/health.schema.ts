import { Type } from 'typebox';
import { otherMethodsSchema } from '../openapi.js';
import { answer, problem } from '../schemas.js';

/**
 * Liveness and readiness: the schema of each route of `health.ts`, from which Fastify validates
 * its requests, serializes its answers and types its handlers, and from which docs/openapi.json is
 * generated (`../openapi.ts`). Its errors are documented here and answered by `../errors.ts`.
 */

/** GET /healthz */
export const liveness = {
  tags: ['operations'],
  operationId: 'liveness',
  summary: 'Liveness: the process is up',
  response: { 200: answer(Type.Object({ status: Type.Literal('ok') }), 'Always, while the process runs.') },
};

/** POST /healthz */
export const livenessOtherMethods = otherMethodsSchema(
  'operations',
  'livenessOtherMethods',
  'GET, HEAD',
  'POST, PUT, DELETE and every other method but GET and HEAD answer 405 with `Allow: GET, HEAD`; no credentials are needed.',
);

/** GET /readyz */
export const readiness = {
  tags: ['operations'],
  operationId: 'readiness',
  summary: 'Readiness: the store answers, or an outage is ridden through',
  description:
    '200 when the store answers within a second, or, while it does not, as long as what the instance cached is still trusted (PostgreSQL: within PG_STALE_LIMIT_MS of its last proof that changes made elsewhere are heard; then `database` is `unreachable`). 503 SERVICE_UNAVAILABLE (with Retry-After) otherwise, for example while PostgreSQL has been unreachable for longer than that, and while the server is shutting down. `changeSignal` says whether changes made by other processes are heard now (`up`), and `problem` why not.',
  response: {
    200: answer(
      Type.Object({
        status: Type.Literal('ready'),
        store: Type.Unsafe<'sqlite' | 'postgres'>({ type: 'string', enum: ['sqlite', 'postgres'] }),
        changeSignal: Type.Unsafe<'up' | 'down'>({
          type: 'string',
          enum: ['up', 'down'],
          description:
            'Whether changes made by other processes are heard now (PostgreSQL: the LISTEN connection hears its heartbeats; always up on SQLite).',
        }),
        problem: Type.Optional(Type.String({ description: 'Why changes are not heard, while `changeSignal` is `down`.' })),
        database: Type.Optional(
          Type.Literal('unreachable', { description: 'Present while the store does not answer and cached grants are still trusted.' }),
        ),
        cachesTrustedUntil: Type.Optional(
          Type.String({
            format: 'date-time',
            description: 'With `database`: when the instance stops serving from memory unless the database answers again.',
          }),
        ),
      }),
      'Ready.',
    ),
  },
  errors: { 503: problem('Not ready. Code: SERVICE_UNAVAILABLE.', { 'Retry-After': { type: 'integer' } }) },
};

/** POST /readyz */
export const readinessOtherMethods = otherMethodsSchema(
  'operations',
  'readinessOtherMethods',
  'GET, HEAD',
  'POST, PUT, DELETE and every other method but GET and HEAD answer 405 with `Allow: GET, HEAD`; no credentials are needed.',
);
