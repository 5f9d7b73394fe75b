import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { serviceUnavailable } from 'tessera-tokens/internal/error-catalogue.js';
import { isTesseraError, type TesseraError } from 'tessera-tokens/internal/errors.js';
import type { Store } from '../../store/store.js';
import { refuseOtherMethods } from '../methods.js';
import { HEALTH_PATH, READINESS_PATH } from '../paths.js';
import { liveness, livenessOtherMethods, readiness, readinessOtherMethods } from './health.schema.js';

const READINESS_TIMEOUT_MS = 1_000;

/**
 * For load balancers: `/healthz` says the process is up; `/readyz` says it can serve. That needs the
 * store to answer within a second, or, while it does not, caches still trusted (an outage ridden
 * through within PG_STALE_LIMIT_MS of the last proof that changes are heard). Both say whether
 * changes made elsewhere are heard, and why not. Neither needs credentials.
 */
export const healthRoutes: FastifyPluginAsyncTypebox<{ store: Store }> = async (app, { store }) => {
  app.get(HEALTH_PATH, { schema: liveness }, (_request, reply) => {
    reply.header('cache-control', 'no-store').send({ status: 'ok' });
  });

  app.get(READINESS_PATH, { schema: readiness }, async (_request, reply) => {
    reply.header('cache-control', 'no-store');
    const answers = await storeAnswers(store);
    const signal = store.changeSignal();
    const changes = signal.up ? { changeSignal: 'up' as const } : { changeSignal: 'down' as const, problem: signal.problem };
    if (answers === true) return { status: 'ready' as const, store: store.backend, ...changes };
    if (signal.trustedUntil > Date.now()) {
      return {
        status: 'ready' as const,
        store: store.backend,
        ...changes,
        database: 'unreachable' as const,
        cachesTrustedUntil: new Date(signal.trustedUntil).toISOString(),
      };
    }
    throw answers;
  });

  refuseOtherMethods(app, HEALTH_PATH, ['GET'], { method: 'POST', schema: livenessOtherMethods });
  refuseOtherMethods(app, READINESS_PATH, ['GET'], { method: 'POST', schema: readinessOtherMethods });
};

/** True if the store answers within the readiness timeout, else the error to answer with. */
async function storeAnswers(store: Store): Promise<true | TesseraError> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      store.ping(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error('store ping timed out')), READINESS_TIMEOUT_MS);
      }),
    ]);
    return true;
  } catch (error) {
    return isTesseraError(error) && error.code === 'SERVICE_UNAVAILABLE' ? error : serviceUnavailable();
  } finally {
    clearTimeout(timer);
  }
}
