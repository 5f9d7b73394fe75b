import type { FastifyPluginAsync } from 'fastify';
import { serviceUnavailable } from '../../error-catalogue.js';
import { isTesseraError, type TesseraError } from '../../errors.js';
import type { Store } from '../../store/store.js';
import { refuseOtherMethods } from '../methods.js';
import { HEALTH_PATH, READINESS_PATH } from '../paths.js';

const READINESS_TIMEOUT_MS = 1_000;

/**
 * For load balancers: `/healthz` says the process is up; `/readyz` says it can serve. That needs the
 * store to answer within a second, or, while it does not, caches still trusted (an outage ridden
 * through within PG_STALE_LIMIT_MS of the last proof that changes are heard). Both say whether
 * changes made elsewhere are heard, and why not. Neither needs credentials.
 */
export const healthRoutes: FastifyPluginAsync<{ store: Store }> = async (app, { store }) => {
  app.get(HEALTH_PATH, (_request, reply) => {
    reply.header('cache-control', 'no-store').send({ status: 'ok' });
  });

  app.get(READINESS_PATH, async (_request, reply) => {
    reply.header('cache-control', 'no-store');
    const answers = await storeAnswers(store);
    const signal = store.changeSignal();
    const changes = signal.up ? { changeSignal: 'up' } : { changeSignal: 'down', problem: signal.problem };
    if (answers === true) return { status: 'ready', store: store.backend, ...changes };
    if (signal.trustedUntil > Date.now()) {
      return {
        status: 'ready',
        store: store.backend,
        ...changes,
        database: 'unreachable',
        cachesTrustedUntil: new Date(signal.trustedUntil).toISOString(),
      };
    }
    throw answers;
  });

  refuseOtherMethods(app, HEALTH_PATH, ['GET']);
  refuseOtherMethods(app, READINESS_PATH, ['GET']);
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
