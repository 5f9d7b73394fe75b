import type { FastifyInstance } from 'fastify';
import type { CreatedApp } from '../../src/apps/service.js';
import type { AdminPathRule } from '../../src/auth/forward.js';
import type { Clock } from 'tessera-tokens/internal/clock.js';
import type { DeveloperLimitSettings } from '../../src/developers/developer-limits.js';
import type { SignInLimitSettings } from '../../src/developers/sign-in-limits.js';
import type { HousekeepingSettings } from '../../src/housekeeping.js';
import { buildServer } from '../../src/server.js';
import type { HttpTimeouts } from '../../src/http/timeouts.js';
import type { RateLimitSettings } from '../../src/limits/rate-limits.js';
import { listenForMetrics, type MetricsListener } from '../../src/http/metrics-listener.js';
import { createLogger } from '../../src/logger.js';
import { loadPrometheusMetrics } from '../../src/prometheus/load.js';
import { createTessera, type Tessera } from '../../src/tessera.js';
import type { DestinationPolicy } from '../../src/webhooks/destination.js';
import { DEFAULT_MAIL_SENDER, type MailSenderSettings } from '../../src/mail/sender.js';
import { DEFAULT_SMTP_TIMEOUTS, parseSmtpUrl, smtpTransport, type SmtpTimeouts } from '../../src/mail/smtp.js';
import type { MailRequestLimitSettings } from '../../src/limits/mail-requests.js';
import { freePort } from './process.js';
import { appUrlOf } from './http.js';
import { createTestStore, type TestStore } from './store.js';
import { forSuite } from './suite.js';

export const NO_LIMITS: RateLimitSettings = {
  enabled: false,
  tokenRequestsPerAddressPerMinute: 1,
  adminFailuresPerAddressPerMinute: 1,
  adminFailuresPerAppPerMinute: 1,
};

/** The key encryption key of every test server (KEY_ENCRYPTION_KEY): servers sharing a store share their JWT keys. */
export const TEST_KEY_ENCRYPTION_KEY = Buffer.alloc(32, 7);

export interface TestServer {
  /** e.g. http://127.0.0.1:40123 */
  baseUrl: string;
  tessera: Tessera;
  testStore: TestStore;
  /** An app created for the test, with its four keys. */
  app: CreatedApp;
  /** `${baseUrl}/api/apps/${app.appId}` */
  appUrl: string;
  /** With the `metrics` option: where they are scraped, e.g. http://127.0.0.1:40124/metrics. */
  metricsUrl: string | undefined;
  close(): Promise<void>;
}

/** A real server listening on 127.0.0.1 on a free port, over a fresh store. Rate limits are off unless given. */
export interface TestServerOptions {
  clock?: Clock;
  rateLimits?: RateLimitSettings;
  forwardAuthAdminPaths?: readonly AdminPathRule[];
  trustedProxies?: readonly string[];
  timeouts?: HttpTimeouts;
  /** For `tessera.housekeeping.run()`: the server does not start it on its own. */
  housekeeping?: HousekeepingSettings;
  /** A store of the caller's, which it disposes of; by default a fresh one, disposed of by `close`. */
  testStore?: TestStore;
  revokedTokensMaxPerApp?: number;
  /** PUBLIC_URL; by default none, so OAuth metadata is based on the loopback address the server listens on. */
  publicUrl?: string;
  /** The developer portal at `/portal/` (on by default). */
  portal?: boolean;
  /** PORTAL_SIGNUP; by default `invite` (no sign-up page). */
  portalSignup?: 'open' | 'invite';
  /** The portal's sign-in (and sign-up) limits; they count only when `rateLimits` are enabled. */
  signInLimits?: SignInLimitSettings;
  /** What one developer may add in the portal; the rates count only when `rateLimits` are enabled. */
  developerLimits?: DeveloperLimitSettings;
  /** Prometheus metrics, as with METRICS_PORT=0: their own listener on 127.0.0.1 (`metricsUrl`). */
  metrics?: boolean;
  /** The server's log lines (JSON, at level info, through the service's own logger), pushed here as they are written. */
  logs?: string[];
  /** LOG_REQUESTS: one line per request (with `logs`). */
  logRequests?: boolean;
  /** KEY_ENCRYPTION_KEY; `TEST_KEY_ENCRYPTION_KEY` by default, null for none. */
  keyEncryptionKey?: Buffer | null;
  /** KEY_ENCRYPTION_KEY_PREVIOUS. */
  previousKeyEncryptionKey?: Buffer;
  /** STATUS_LIST_TTL_SECONDS. */
  statusListTtlSeconds?: number;
  /** WEBHOOK_ALLOW_HTTP and WEBHOOK_ALLOW_PRIVATE; the service's default (neither) unless given. */
  webhookDestinations?: DestinationPolicy;
  /** WEBHOOK_TIMEOUT_SECONDS, in ms. */
  webhookTimeoutMs?: number;
  /** Starts the webhook sender, as `tessera serve` does (the tests that send deliveries by hand leave it off). */
  webhookSender?: boolean;
  /**
   * Mail, as with SMTP_URL: sent through `smtpUrl`, its links based on the server's own URL (PUBLIC_URL
   * is that URL, unless given), the sender started (and stopped by `close`).
   */
  mail?: { smtpUrl: string; sender?: Partial<MailSenderSettings>; timeouts?: SmtpTimeouts; requestLimits?: MailRequestLimitSettings };
}

/** Listens on 127.0.0.1, on a port the kernel picks; returns the base URL. */
export async function listenLocally(server: FastifyInstance, port = 0): Promise<string> {
  await server.listen({ host: '127.0.0.1', port });
  const address = server.server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return `http://127.0.0.1:${address.port}`;
}

export async function startServer(options: TestServerOptions = {}): Promise<TestServer> {
  const testStore = options.testStore ?? (await createTestStore());
  const metrics = options.metrics === true ? await loadPrometheusMetrics() : undefined;
  // Mail's links are whole: the server's own URL is known before it listens.
  const port = options.mail === undefined ? 0 : await freePort();
  const publicUrl = options.publicUrl ?? (options.mail === undefined ? undefined : `http://127.0.0.1:${port}`);
  const mail =
    options.mail === undefined || publicUrl === undefined
      ? undefined
      : {
          transport: smtpTransport(
            parseSmtpUrl(options.mail.smtpUrl),
            'Tessera <tessera@127.0.0.1>',
            options.mail.timeouts ?? DEFAULT_SMTP_TIMEOUTS,
          ),
          publicUrl,
          sender: { ...DEFAULT_MAIL_SENDER, ...options.mail.sender },
          ...(options.mail.requestLimits === undefined ? {} : { requestLimits: options.mail.requestLimits }),
        };
  const tessera = createTessera({
    store: metrics === undefined ? testStore.store : metrics.instrument(testStore.store),
    ...(metrics === undefined ? {} : { metrics }),
    rateLimits: options.rateLimits ?? NO_LIMITS,
    ...(options.clock === undefined ? {} : { clock: options.clock }),
    ...(options.revokedTokensMaxPerApp === undefined ? {} : { revokedTokensMaxPerApp: options.revokedTokensMaxPerApp }),
    ...(options.housekeeping === undefined ? {} : { housekeeping: options.housekeeping }),
    ...(options.signInLimits === undefined ? {} : { signInLimits: options.signInLimits }),
    ...(options.developerLimits === undefined ? {} : { developerLimits: options.developerLimits }),
    ...(options.keyEncryptionKey === null ? {} : { keyEncryptionKey: options.keyEncryptionKey ?? TEST_KEY_ENCRYPTION_KEY }),
    ...(options.previousKeyEncryptionKey === undefined ? {} : { previousKeyEncryptionKey: options.previousKeyEncryptionKey }),
    ...(options.statusListTtlSeconds === undefined ? {} : { statusListTtlSeconds: options.statusListTtlSeconds }),
    ...(options.webhookDestinations === undefined ? {} : { webhookDestinations: options.webhookDestinations }),
    ...(options.webhookTimeoutMs === undefined ? {} : { webhookTimeoutMs: options.webhookTimeoutMs }),
    webhookPollMs: 100,
    ...(mail === undefined ? {} : { mail, publicUrl }),
  });
  if (options.webhookSender === true) tessera.webhookSender.start();
  const app = await tessera.apps.create('Test app');
  const server = buildServer({
    tessera,
    forwardAuthAdminPaths: options.forwardAuthAdminPaths ?? [],
    trustedProxies: options.trustedProxies ?? [],
    ...(options.timeouts === undefined ? {} : { timeouts: options.timeouts }),
    ...(publicUrl === undefined ? {} : { publicUrl }),
    ...(options.portal === undefined ? {} : { portal: options.portal }),
    ...(options.portalSignup === undefined ? {} : { portalSignup: options.portalSignup }),
    ...(options.logs === undefined ? {} : { logger: createLogger('info', 'json', { write: (line: string) => options.logs!.push(line) }) }),
    ...(options.logRequests === undefined ? {} : { logRequests: options.logRequests }),
  });
  const baseUrl = await listenLocally(server, port);
  tessera.mail?.sender.start();
  let metricsListener: MetricsListener | undefined;
  if (metrics !== undefined) {
    metrics.watchEvents(tessera.events);
    metricsListener = await listenForMetrics(() => metrics.scrape(), '127.0.0.1', 0);
  }
  return {
    baseUrl,
    tessera,
    testStore,
    app,
    appUrl: appUrlOf(baseUrl, app.appId),
    metricsUrl: metricsListener?.url,
    async close() {
      await Promise.all([server.close(), metricsListener?.close()]);
      await tessera.webhookSender.stop();
      await tessera.mail?.sender.stop();
      await tessera.events.flush();
      await tessera.limits.close();
      if (options.testStore === undefined) await testStore.dispose();
    },
  };
}

/** A server for the tests of the suite this is called in: see `forSuite`. */
export function serverForSuite(options: TestServerOptions = {}, setUp?: (server: TestServer) => Promise<unknown>): TestServer {
  return forSuite(() => startServer(options), setUp);
}
