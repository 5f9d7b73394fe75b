import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { RequestDurations, RouteDurations } from '../metrics/port.js';

/**
 * Answers go out in the event loop's check phase (`setImmediate`), after the reads of the turn,
 * instead of inside the read that completed the request. Under load the loop then takes many
 * requests per wake-up and writes their answers together, rather than going round once per request;
 * the group commit of admin tokens already had that effect. Measured with `npm run bench:cpu`
 * (docs/benchmarks.md, item 10): half the server CPU per `whoami`, twice the throughput, for one
 * turn of latency (microseconds on an idle server).
 *
 * With `durations` (METRICS_PORT), an `onRequest` hook notes each request's arrival and this hook
 * times it as its answer is written; without metrics, neither is added.
 */
export function batchAnswers(app: FastifyInstance, durations?: RequestDurations): void {
  if (durations === undefined) {
    app.addHook('onSend', (_request, _reply, payload, done) => {
      setImmediate(done, null, payload);
    });
    return;
  }
  // Each route's series are made once, here, and found through the route's config: a request
  // builds no label and looks nothing up by name.
  app.addHook('onRoute', (route) => {
    route.config = { ...route.config, [ROUTE_DURATIONS]: durations.route(route.url) };
  });
  // Fastify notes a request's start only for `onResponse` hooks or a logger, which cost more.
  app.decorateRequest(ARRIVED_AT, 0);
  app.addHook('onRequest', (request, _reply, done) => {
    (request as TimedRequest)[ARRIVED_AT] = performance.now();
    done();
  });
  const unmatched = durations.unmatched;
  app.addHook('onSend', (request, reply, payload, done) => {
    const route = (request.routeOptions.config as RouteConfig)[ROUTE_DURATIONS] ?? unmatched;
    setImmediate(answerTimed, route, request, reply, payload, done);
  });
}

const ROUTE_DURATIONS = Symbol('tessera.routeDurations');
const ARRIVED_AT = 'tesseraArrivedAt';

interface RouteConfig {
  [ROUTE_DURATIONS]?: RouteDurations;
}

interface TimedRequest extends FastifyRequest {
  [ARRIVED_AT]: number;
}

type OnSendDone = (error: Error | null, payload: unknown) => void;

function answerTimed(route: RouteDurations, request: FastifyRequest, reply: FastifyReply, payload: unknown, done: OnSendDone): void {
  const arrivedAt = (request as TimedRequest)[ARRIVED_AT];
  // 0: refused before the hooks ran (Fastify's own errors); counted, without a duration to tell.
  route.observe(request.method, reply.statusCode, arrivedAt === 0 ? 0 : (performance.now() - arrivedAt) / 1000);
  done(null, payload);
}
