import type { Config } from '../config.js';
import { resolveKeyEncryptionKey } from '../jwt/key-encryption.js';
import { isServiceUnavailable } from 'tessera-tokens/internal/error-catalogue.js';
import { DEFAULT_DEVELOPER_LIMITS } from '../developers/developer-limits.js';
import { publicBaseUrl } from '../http/public-url.js';
import { buildServer } from '../server.js';
import { createLogger } from '../logger.js';
import { loadPrometheusMetrics } from '../prometheus/load.js';
import { listenForMetrics, type MetricsListener } from '../http/metrics-listener.js';
import { openStore } from '../store/open.js';
import { smtpTransport } from '../mail/smtp.js';
import { createTessera } from '../tessera.js';
import type { Tracing } from '../tracing/start.js';
import { createDemoDeveloper, demoBanner } from './demo.js';
import { compareReleases, currentBuild } from 'tessera-tokens/internal/release.js';
import { INSTANCE_SEEN_WITHIN_MS, InstanceRegistry } from '../upgrade/registry.js';
import type { Unwritten } from '../events/log.js';
import { constants as osConstants } from 'node:os';

/** How long a stopping server waits for the last spans to be sent. */
const TRACES_FLUSH_MS = 3_000;

/**
 * `tessera serve`: runs the HTTP server until SIGTERM or SIGINT, then drains and exits 0; exits 1
 * when its store does not close within SHUTDOWN_STORE_TIMEOUT_MS after the drain, and at once (128
 * + the signal's number) on a second signal, saying what it leaves undone. With
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
    checkpointsOffThread: true,
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
  const keyEncryptionKey = resolveKeyEncryptionKey(config.keyEncryptionKey, config.databaseUrl);
  if (config.mail !== undefined && keyEncryptionKey === undefined) {
    await store.close();
    throw new Error(
      'Tessera does not start: SMTP_URL needs KEY_ENCRYPTION_KEY on PostgreSQL (openssl rand -base64 32, the same on every instance). ' +
        'The mail waiting to be sent holds one-time links, kept encrypted under it (docs/deployment.md, "Mail").',
    );
  }
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
    keyEncryptionKey,
    previousKeyEncryptionKey: config.previousKeyEncryptionKey,
    statusListTtlSeconds: config.statusListTtlSeconds,
    webhookDestinations: config.webhookDestinations,
    webhookTimeoutMs: config.webhookTimeoutMs,
    mail:
      config.mail === undefined || config.publicUrl === undefined
        ? undefined
        : { transport: smtpTransport(config.mail.smtp, config.mail.from), publicUrl: config.publicUrl },
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
  tessera.webhookSender.start();
  tessera.refusalBursts.start();
  tessera.mail?.sender.start();
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

  // Stopping: the HTTP drain, then the store within SHUTDOWN_STORE_TIMEOUT_MS, then the last spans.
  let phase: StopPhase | undefined;
  /** Whether this instance's row was removed from the store's registry of instances. */
  let registryLeft = false;
  const storeClosing = new AbortController();
  /** Gives up what is left: says it, in one warning (`exitCode` included), and lets nothing more be written. */
  const sayUndone = (why: string, exitCode: number, fields: Record<string, unknown>): void => {
    const unwritten = phase === 'draining' || phase === 'closing' ? tessera.events.abandon() : { events: 0, eventsSent: 0, counts: 0 };
    storeClosing.abort();
    const undone = leftUndone(phase ?? 'draining', unwritten, registryLeft, metrics !== undefined);
    // Only while closing is that known (draining, requests still record; after a stop given up, it was said).
    const allWritten =
      phase === 'closing' && unwritten.events === 0 && unwritten.counts === 0 ? ' Every audit event and count was written.' : '';
    logger.warn(
      {
        ...fields,
        eventsNotWritten: unwritten.events,
        eventsSentUnanswered: unwritten.eventsSent,
        countsNotWritten: unwritten.counts,
        exitCode,
      },
      `${why}. Left undone: ${undone.join('; ')}.${allWritten} Exit code ${exitCode}.`,
    );
  };
  const exitNow = (exitCode: number): never => {
    logger.flush();
    process.exit(exitCode);
  };
  const stop = async (signal: string, exitCode = 0) => {
    if (phase !== undefined) return;
    phase = 'draining';
    logger.info({ signal }, 'draining in-flight requests, then stopping');
    try {
      await Promise.all([server.close(), metricsListener?.close()]);
      phase = 'closing';
      const timeoutMs = config.shutdownStoreTimeoutMs;
      const closed = await within(timeoutMs, async () => {
        registryLeft = await registry.stop();
        await tessera.close(storeClosing.signal);
      });
      if (!closed) {
        sayUndone(
          `stopping without finishing: the store did not close within SHUTDOWN_STORE_TIMEOUT_MS (${timeoutMs} ms), the database not answering in time`,
          EXIT_STORE_NOT_CLOSED,
          { signal, timeoutMs },
        );
        phase = 'tracing';
        await tracing?.shutdown(TRACES_FLUSH_MS);
        exitNow(EXIT_STORE_NOT_CLOSED);
      }
      phase = 'tracing';
      await tracing?.shutdown(TRACES_FLUSH_MS);
      phase = 'stopped';
      logger.info('stopped');
      logger.flush();
      process.exitCode = exitCode;
    } catch (error) {
      phase = 'stopped';
      logger.error({ err: error }, 'failed to stop cleanly');
      logger.flush();
      process.exitCode = 1;
    }
  };
  stopping.stop = stop;
  // A second signal while stopping stops at once, with the code of a process that signal killed.
  const onSignal = (signal: NodeJS.Signals) => {
    if (phase === undefined) return void stop(signal);
    if (phase === 'stopped') return exitNow(Number(process.exitCode ?? 0));
    const exitCode = 128 + osConstants.signals[signal];
    sayUndone(`${signal} again while stopping: stopping at once`, exitCode, { signal });
    exitNow(exitCode);
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
}

/** Where a stop is: draining HTTP, closing the store, sending the last spans, or done. */
type StopPhase = 'draining' | 'closing' | 'tracing' | 'stopped';

/** The exit code of a stop whose store did not close within SHUTDOWN_STORE_TIMEOUT_MS. */
export const EXIT_STORE_NOT_CLOSED = 1;

/** Whether `work` ended within `ms`; past it, it goes on regardless (the caller exits). Rejects if `work` fails first. */
async function within(ms: number, work: () => Promise<void>): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeUp = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([work().then(() => true), timeUp]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The audit events and counts given up, and of those events the ones sent in writes the database
 * did not answer: one it received before it stopped answering is carried out when it runs again.
 */
function unwrittenInWords({ events, eventsSent, counts }: Unwritten, metricsOn: boolean): string {
  const what = `${events} audit events, and the counts of ${counts} events, were not written`;
  const fate =
    eventsSent === 0
      ? ' and are lost'
      : `: ${eventsSent === events ? 'all' : eventsSent} of these events ${eventsSent === 1 ? 'was' : 'were'} sent in writes the database has not answered, ` +
        `and may be stored if it runs again${eventsSent < events ? `; the other ${events - eventsSent} are lost` : ''}`;
  const counted = metricsOn
    ? ' (counted as lost in tessera_events_lost_total{reason="stopped"}, which no scrape will read: this line is their record)'
    : '';
  return what + fate + counted;
}

/** What a stop that gives up at `phase` leaves undone, in words, for its one warning. */
function leftUndone(phase: StopPhase, unwritten: Unwritten, registryLeft: boolean, metricsOn: boolean): string[] {
  const undone: string[] = [];
  if (phase === 'draining') undone.push('requests still in flight were cut off');
  if (phase === 'draining' || phase === 'closing') {
    if (unwritten.events > 0 || unwritten.counts > 0) undone.push(unwrittenInWords(unwritten, metricsOn));
    if (!registryLeft) {
      undone.push(
        `this instance is still registered on the store (others take it as stopped once unseen for ${INSTANCE_SEEN_WITHIN_MS / 1000} s)`,
      );
    }
    undone.push('the store was not closed (its connections are dropped as the process exits)');
  }
  if (phase === 'tracing') undone.push('the last spans were not all sent');
  return undone;
}
