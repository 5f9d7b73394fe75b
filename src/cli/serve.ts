import type { Config } from '../config.js';
import { isServiceUnavailable } from '../error-catalogue.js';
import { DEFAULT_DEVELOPER_LIMITS } from '../developers/developer-limits.js';
import { publicBaseUrl } from '../http/public-url.js';
import { buildServer } from '../server.js';
import { createLogger } from '../logger.js';
import { loadPrometheusMetrics } from '../prometheus/load.js';
import { listenForMetrics, type MetricsListener } from '../http/metrics-listener.js';
import { openStore } from '../store/open.js';
import { createTessera } from '../tessera.js';
import type { Tracing } from '../tracing/start.js';
import { createDemoDeveloper, demoBanner } from './demo.js';
import { compareReleases, currentBuild } from '../release.js';
import { InstanceRegistry } from '../upgrade/registry.js';

/** How long a stopping server waits for the last spans to be sent. */
const TRACES_FLUSH_MS = 3_000;

/**
 * `tessera serve`: runs the HTTP server until SIGTERM or SIGINT, then drains and exits 0. With
 * `tracing` (started by the caller, before this module loaded), the store, the token check and
 * issuance make spans of their own.
 */
export async function serve(config: Config, tracing?: Tracing): Promise<void> {
  const logger = createLogger(config.logLevel, config.logFormat);
  // Without METRICS_PORT, prom-client is not even loaded, and the services count nothing.
  const metrics = config.metrics === undefined ? undefined : await loadPrometheusMetrics();
  const openedStore = await openStore(config.databaseUrl, {
    ...config.postgres,
    checkGrants: true,
    onWarning: (message, error) => logger.warn({ err: error }, message),
  }).catch((error: unknown) => {
    if (!isServiceUnavailable(error)) throw error;
    throw new Error(
      `Tessera does not start: ${(error as Error).message} Start it again once the database is back (it tries for PG_STARTUP_TIMEOUT_MS, ${config.postgres.startupRetryMs} ms).`,
      { cause: error },
    );
  });
  const measured = metrics === undefined ? openedStore : metrics.instrument(openedStore);
  const store = tracing === undefined ? measured : tracing.spans.traceStore(measured);
  const tessera = createTessera({
    store,
    ...(metrics === undefined ? {} : { metrics }),
    rateLimits: config.rateLimits,
    housekeeping: config.housekeeping,
    revokedTokensMaxPerApp: config.revokedTokensMaxPerApp,
    cacheMemoryMb: config.cacheMemoryMb,
    upgradeFinalizeAfterMs: config.upgradeFinalizeAfterMs,
    developerLimits: { ...DEFAULT_DEVELOPER_LIMITS, ownedApps: config.portalAppsPerDeveloper },
    publicUrl: config.publicUrl,
    onWarning: (message, error) => logger.warn({ err: error }, message),
    onNotice: (message) => logger.info(message),
  });
  tracing?.spans.traceServices(tessera);
  tracing?.onProblem((message, leftOut) =>
    logger.warn(
      { leftOut },
      `tracing (OpenTelemetry): ${message}${leftOut > 0 ? ` (${leftOut} more such problems since the last one logged)` : ''}`,
    ),
  );

  const build = currentBuild();
  // Set once the server listens: what a refusal found by a heartbeat stops.
  const stopping: { stop?: (signal: string, exitCode?: number) => Promise<void> } = {};
  const registry = new InstanceRegistry(store.upgrade, tessera.capabilities, tessera.clock, build, {
    finalizeAfterMs: config.upgradeFinalizeAfterMs,
    onWarning: (message, error) => logger.warn({ err: error }, message),
    onRecovered: (message) => logger.info(message),
    onRefused: (error) => {
      logger.error(`${error.message} This instance stops.`);
      void stopping.stop?.('UPGRADE_FINALIZED', 1);
    },
    onFinalized: (release) =>
      logger.info({ release }, `the store is finalized for Tessera ${release}: no older release has served on it for a while`),
  });
  try {
    await registry.start();
  } catch (error) {
    await tessera.close();
    throw error;
  }

  // Shared limits from the first request, if Redis answers within 2 s; per instance until it does otherwise.
  await tessera.limits.ready();

  // Only the embedded store gets a demo app: a shared PostgreSQL is provisioned on purpose.
  const demo =
    config.demoApp && store.backend === 'sqlite' && (await store.apps.count()) === 0 ? await tessera.apps.create('Demo app') : undefined;
  // With the portal on, a developer account owns the demo app, so that a newcomer sees it there.
  const demoLink = demo !== undefined && config.portal ? await createDemoDeveloper(tessera, demo.appId) : undefined;

  const server = buildServer({
    tessera,
    logger,
    logRequests: config.logRequests,
    forwardAuthAdminPaths: config.forwardAuthAdminPaths,
    trustedProxies: config.trustedProxies,
    timeouts: config.http,
    publicUrl: config.publicUrl,
    portal: config.portal,
    portalSignup: config.portalSignup,
    ...(tracing === undefined ? {} : { tracing: tracing.requests }),
  });
  try {
    await server.listen({ host: config.host, port: config.port });
  } catch (error) {
    await registry.stop();
    await tessera.close();
    throw new Error(`cannot listen on ${config.host}:${config.port}: ${(error as Error).message}`, { cause: error });
  }
  metrics?.watchEvents(tessera.events);
  let metricsListener: MetricsListener | undefined;
  if (metrics !== undefined && config.metrics !== undefined) {
    try {
      metricsListener = await listenForMetrics(() => metrics.scrape(), config.metrics.host, config.metrics.port);
    } catch (error) {
      await server.close();
      await registry.stop();
      await tessera.close();
      throw new Error(`cannot listen on ${config.metrics.host}:${config.metrics.port} for metrics: ${(error as Error).message}`, {
        cause: error,
      });
    }
  }
  const address = server.server.address();
  const port = typeof address === 'object' && address !== null ? address.port : config.port;
  const host = ['0.0.0.0', '::'].includes(config.host) ? '127.0.0.1' : config.host;
  const baseUrl = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  tessera.housekeeping.start();
  logger.info(
    { url: baseUrl, store: store.backend, version: build.version, commit: build.commit, schemaVersion: build.schemaVersion },
    'Tessera is listening',
  );
  const state = tessera.capabilities.state;
  if (state !== undefined && compareReleases(state.finalizedRelease, build.version) < 0) {
    logger.warn(
      `the store is finalized for Tessera ${state.finalizedRelease}: what an older release would misread waits until none has been seen ` +
        `for ${config.upgradeFinalizeAfterMs / 1000} s, or \`tessera upgrade finalize\` (docs/deployment.md, "Upgrading")`,
    );
  }
  if (metricsListener !== undefined) logger.info({ url: metricsListener.url }, `metrics on ${metricsListener.url}`);
  if (tracing !== undefined) logger.info(tracing.summary, 'tracing on: OpenTelemetry spans are exported');
  if (publicBaseUrl(config.publicUrl, server.server) === undefined) {
    logger.warn('PUBLIC_URL is not set and the server does not listen on a loopback address: OAuth metadata (RFC 8414) is not served');
  }
  if (demo !== undefined) process.stderr.write(demoBanner(demo, baseUrl, demoLink));

  let stopped = false;
  const stop = async (signal: string, exitCode = 0) => {
    if (stopped) return;
    stopped = true;
    logger.info({ signal }, 'draining in-flight requests, then stopping');
    try {
      await Promise.all([server.close(), metricsListener?.close()]);
      await registry.stop();
      await tessera.close();
      await tracing?.shutdown(TRACES_FLUSH_MS);
      logger.info('stopped');
      logger.flush();
      process.exitCode = exitCode;
    } catch (error) {
      logger.error({ err: error }, 'failed to stop cleanly');
      logger.flush();
      process.exitCode = 1;
    }
  };
  stopping.stop = stop;
  process.once('SIGTERM', () => void stop('SIGTERM'));
  process.once('SIGINT', () => void stop('SIGINT'));
}
