import type { FastifyPluginAsync } from 'fastify';
import { serviceUnavailable } from '../../error-catalogue.js';
import { isTesseraError } from '../../errors.js';
import type { Store } from '../../store/store.js';
import { refuseOtherMethods } from '../methods.js';
import { HEALTH_PATH, READINESS_PATH } from '../paths.js';

const READINESS_TIMEOUT_MS = 1_000;

/**
 * For load balancers: `/healthz` says the process is up; `/readyz` says it can serve, which needs the
 * store to answer within a second. Neither needs credentials, and neither says anything else.
 */
export const healthRoutes: FastifyPluginAsync<{ store: Store }> = async (app, { store }) => {
  app.get(HEALTH_PATH, (_request, reply) => {
    reply.header('cache-control', 'no-store').send({ status: 'ok' });
  });

  app.get(READINESS_PATH, async (_request, reply) => {
    reply.header('cache-control', 'no-store');
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        store.ping(),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error('store ping timed out')), READINESS_TIMEOUT_MS);
        }),
      ]);
    } catch (error) {
      if (isTesseraError(error) && error.code === 'SERVICE_UNAVAILABLE') throw error;
      throw serviceUnavailable();
    } finally {
      clearTimeout(timer);
    }
    return { status: 'ready', store: store.backend };
  });

  refuseOtherMethods(app, HEALTH_PATH, ['GET']);
  refuseOtherMethods(app, READINESS_PATH, ['GET']);
};
