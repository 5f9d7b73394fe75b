import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { serviceUnavailable } from 'tessera-tokens/internal/error-catalogue.js';
import { TesseraError } from 'tessera-tokens/internal/errors.js';
import { answeredDetailOf, logAnsweredError } from '../../src/http/error-log.js';
import { errorBody, toTesseraError } from 'tessera-tokens/internal/http/errors.js';
import { withCause } from 'tessera-tokens/internal/store/postgres/errors.js';

/** A logger that keeps what is logged at level error. */
function recordingLogger(): { logger: Logger; errors: [Record<string, unknown>, string][] } {
  const errors: [Record<string, unknown>, string][] = [];
  return {
    logger: { error: (fields: Record<string, unknown>, message: string) => errors.push([fields, message]) } as unknown as Logger,
    errors,
  };
}

const requestWithId = (id: string) => ({ id }) as FastifyRequest;

describe("an error's internal detail", () => {
  it("keeps the framework's code, never its message, and never sends it", () => {
    const refused = Object.assign(new Error('Unsupported Media Type: text/secret-in-a-header'), {
      code: 'FST_ERR_CTP_INVALID_MEDIA_TYPE',
      statusCode: 415,
    });
    const answered = toTesseraError(refused);
    assert.equal(answered.code, 'UNSUPPORTED_MEDIA_TYPE');
    assert.equal(answered.details.internalDetail, 'FST_ERR_CTP_INVALID_MEDIA_TYPE');
    assert.ok(!errorBody(answered).includes('FST_ERR'), 'the body has no detail');
  });

  it("goes with a 5xx's line at once, and with the request's own line otherwise", () => {
    const { logger, errors } = recordingLogger();
    const failed = requestWithId('failed');
    const thrown = new TesseraError('INTERNAL_ERROR', 'The service failed to handle this request.', { internalDetail: 'inside' });
    logAnsweredError(logger, failed, thrown, thrown);
    assert.deepEqual(
      errors.map(([fields, message]) => [fields.reqId, fields.detail, message]),
      [['failed', 'inside', 'request failed']],
    );

    const refused = requestWithId('refused');
    logAnsweredError(logger, refused, new Error('x'), toTesseraError(Object.assign(new Error('x'), { code: 'FST_ERR_BAD_URL' })));
    assert.equal(errors.length, 1, 'a 4xx is no line of its own');
    assert.equal(answeredDetailOf(refused), 'FST_ERR_BAD_URL');
  });

  it('says what made a 503 with the request, which the store reports once per outage', () => {
    const { logger, errors } = recordingLogger();
    const request = requestWithId('unavailable');
    const unavailable = withCause(serviceUnavailable(), { code: '08006', message: 'Connection terminated unexpectedly' });
    logAnsweredError(logger, request, unavailable, unavailable);
    assert.deepEqual(errors, []);
    assert.equal(answeredDetailOf(request), 'Connection terminated unexpectedly (08006)');
    assert.ok(!errorBody(unavailable).includes('08006'));
  });
});
