import { AppAccess } from './app-access.js';
import type { AppCache } from 'tessera-tokens/internal/apps/cache.js';
import { CredentialService } from './apps/credential-service.js';
import { AppEvents } from './apps/events.js';
import { AppImports } from './apps/import.js';
import { AppMembers } from './apps/members.js';
import { OwnedApps } from './apps/owned-apps.js';
import { AppService } from './apps/service.js';
import type { Authenticator } from 'tessera-tokens/internal/auth/authenticate.js';
import { systemClock, type Clock } from 'tessera-tokens/internal/clock.js';
import { CredentialUse } from './credentials/last-used.js';
import { DeveloperAccounts } from './developers/accounts.js';
import { DEFAULT_DEVELOPER_LIMITS, DeveloperLimits, type DeveloperLimitSettings } from './developers/developer-limits.js';
import { DeveloperSessions } from './developers/sessions.js';
import { isServiceUnavailable } from 'tessera-tokens/internal/error-catalogue.js';
import { createSignInLimits, DEFAULT_SIGN_IN_LIMITS, type SignInLimitSettings } from './developers/sign-in-limits.js';
import { EventLog } from './events/log.js';
import { DEFAULT_HOUSEKEEPING, Housekeeping, type HousekeepingSettings } from './housekeeping.js';
import { createRateLimits, DEFAULT_RATE_LIMITS, type RateLimits, type RateLimitSettings } from './limits/rate-limits.js';
import { NO_METRICS, type Metrics } from './metrics/port.js';
import type { Store } from './store/store.js';
import { anonymousRequest } from './request-context.js';
import { createTokenChecking } from 'tessera-tokens/internal/token-checking.js';
import type { TokenChecker } from 'tessera-tokens/internal/tokens/checker.js';
import { SigningKeyService } from './signing-keys/service.js';
import { AdminAuthentication } from './tokens/client-authentication.js';
import { EndpointCallers } from './auth/endpoint-callers.js';
import { TokenIssuer } from './tokens/issuer.js';
import { TokenRevoker } from './tokens/revocation.js';
import { currentBuild } from 'tessera-tokens/internal/release.js';
import { Capabilities } from './upgrade/capabilities.js';
import { PLAY_INTEGRITY, type PlayIntegrity } from './attestation/android.js';
import { APP_ATTEST, type AppAttest } from './attestation/apple.js';
import { PlatformSettings } from './attestation/platform-settings.js';
import { AttestationChecker } from './attestation/checker.js';
import { DebugTokens } from './attestation/debug-tokens.js';
import { IssuanceRate } from './attestation/issuance-rate.js';
import { ProofOfWork } from './attestation/pow.js';
import { PowSerials } from './attestation/pow-serials.js';
import { DEFAULT_FINALIZE_AFTER_MS, INSTANCE_SEEN_WITHIN_MS } from './upgrade/registry.js';
import { KeyEncryption } from './jwt/key-encryption.js';
import { SAFE_DESTINATIONS, type DestinationPolicy } from './webhooks/destination.js';
import { WebhookSender } from './webhooks/sender.js';
import { RefusalBurstWatch } from './apps/refusal-bursts.js';
import { WebhookSecrets, WebhookService } from './webhooks/service.js';
import { JwtKeyService } from './jwt/keys.js';
import { StatusLists } from './jwt/status-lists.js';
import { JwtIssuer } from './jwt/issuer.js';
import { AlertMailer, AlertSettings } from './mail/alerts.js';
import { EmailConfirmations } from './mail/confirmation.js';
import { DEFAULT_MAIL_REQUEST_LIMITS, MailRequestLimits, type MailRequestLimitSettings } from './limits/mail-requests.js';
import { DEFAULT_OUTBOX_BOUNDS, MailOutbox } from './mail/outbox.js';
import { DEFAULT_MAIL_SENDER, MailSender, type MailSenderSettings } from './mail/sender.js';
import type { MailTransport } from './mail/smtp.js';
import type { OutboxBounds } from './mail/store.js';

/**
 * The domain services wired to one store: the composition root of the HTTP server and the CLI.
 * Each route plugin and CLI verb takes only the services it uses.
 */
export interface Tessera {
  readonly store: Store;
  readonly clock: Clock;
  readonly apps: AppService;
  /** Apps' further credentials, each with its scopes: created, listed, rotated and revoked. */
  readonly credentials: CredentialService;
  readonly appCache: AppCache;
  readonly issuer: TokenIssuer;
  /** Checks ClientID and ClientSecret under the limits on failed admin attempts. */
  readonly admins: AdminAuthentication;
  /** Who calls revocation and introspection: a token, Basic anonymous, or the client's own credentials. */
  readonly callers: EndpointCallers;
  readonly checker: TokenChecker;
  readonly revoker: TokenRevoker;
  /** The keys that sign anonymous tokens (`tessera keys`). */
  readonly signingKeys: SigningKeyService;
  readonly authenticator: Authenticator;
  readonly limits: RateLimits;
  /** The audit log: recorded by the services, read unchecked by the operator's CLI. */
  readonly events: EventLog;
  /** An app's events and counts, read for whoever may see them (the portal, the API). */
  readonly appEvents: AppEvents;
  /** Developer accounts: created by the operator, their passwords and one-time links. */
  readonly developers: DeveloperAccounts;
  /** The portal's sessions: sign-in, the check of a session, sign-out. */
  readonly developerSessions: DeveloperSessions;
  /** Who owns and who collaborates on each app, and what each may do. */
  readonly members: AppMembers;
  /** Apps created with an owner (the CLI's `apps create --owner`, the portal's new apps). */
  readonly ownedApps: OwnedApps;
  /** Apps brought in with their keys, and written out in the same shape (`tessera apps import`, `apps export`). */
  readonly appImports: AppImports;
  /** Not started: the server starts it (`tessera serve`); the CLI does not. */
  readonly housekeeping: Housekeeping;
  /** An app's webhooks: made, listed, deleted, their secrets rotated, their deliveries listed and sent again. */
  readonly webhooks: WebhookService;
  /** Sends the webhooks' deliveries. Not started: the server starts it (`tessera serve`); the CLI does not. */
  readonly webhookSender: WebhookSender;
  /** Records `app.refusal_burst` events. Not started: the server starts it (`tessera serve`). */
  readonly refusalBursts: RefusalBurstWatch;
  /** What the services count for Prometheus (METRICS_PORT); `NO_METRICS` otherwise. */
  readonly metrics: Metrics;
  /** What the store's upgrade state allows: the capabilities an older release sharing it would misread wait for its finalization. */
  readonly capabilities: Capabilities;
  /** Attestation of anonymous token requests: the proof of work's challenges, the debug tokens, the checks. */
  readonly attestation: Attestation;
  /** JWT access tokens: their keys (`tessera keys`, the JWKS), status lists and issuer. */
  readonly jwt: Jwt;
  /** Mail, with a mail server (`SMTP_URL`); undefined without. The sender is not started: the server starts it. */
  readonly mail: Mail | undefined;
  /**
   * Stops housekeeping, writes the buffered audit events (or says what is lost), then closes the
   * limits and the store. While the database cannot be reached, the events are tried again until
   * `keepTryingUntil` aborts (`tessera serve`, SHUTDOWN_STORE_TIMEOUT_MS); without it, once.
   */
  close(keepTryingUntil?: AbortSignal): Promise<void>;
}

export interface Attestation {
  pow: ProofOfWork;
  debugTokens: DebugTokens;
  playIntegrity: PlayIntegrity;
  appAttest: AppAttest;
  checker: AttestationChecker;
}

export interface Mail {
  /** Mail waiting to be sent, written by the services in their changes' transactions. */
  outbox: MailOutbox;
  /** The loop that sends it, and mails the alerts (`tessera serve` starts it). */
  sender: MailSender;
  /** Whether each member gets each app's alerts. */
  alerts: AlertSettings;
}

/** What mail needs (`SMTP_URL`). */
export interface MailOptions {
  transport: MailTransport;
  /** PUBLIC_URL: every link mailed is whole. */
  publicUrl: string;
  sender?: MailSenderSettings;
  bounds?: OutboxBounds;
  requestLimits?: MailRequestLimitSettings;
}

export interface Jwt {
  keys: JwtKeyService;
  statusLists: StatusLists;
  issuer: JwtIssuer;
}

export interface TesseraOptions {
  store: Store;
  clock?: Clock;
  rateLimits?: RateLimitSettings;
  housekeeping?: HousekeepingSettings;
  /** Anonymous tokens of one app that callers other than its admin may keep revoked one by one. */
  revokedTokensMaxPerApp?: number;
  /** Failed sign-ins to the portal allowed before more are refused. */
  signInLimits?: SignInLimitSettings;
  /** What one developer may add in the portal: apps it owns (PORTAL_APPS_PER_DEVELOPER), apps and invitations an hour. */
  developerLimits?: DeveloperLimitSettings;
  /** The service's public URL (`PUBLIC_URL`), for whole one-time links; without it they are paths. */
  publicUrl?: string | undefined;
  /** Told about failures that do not fail a request (an audit event that could not be written). */
  onWarning?: (message: string, error: unknown) => void;
  /** Told when something that failed works again (audit events written after an outage). */
  onNotice?: (message: string) => void;
  /** Told what to count for Prometheus (METRICS_PORT); nothing by default. */
  metrics?: Metrics;
  /** What the caches of apps and tokens may take in all (CACHE_MEMORY_MB); `DEFAULT_CACHE_MEMORY_MB` by default. */
  cacheMemoryMb?: number;
  /** UPGRADE_FINALIZE_AFTER_SECONDS, in ms: said in the 409 of a capability that waits for it. */
  upgradeFinalizeAfterMs?: number;
  /** The key the private JWT keys are encrypted with (KEY_ENCRYPTION_KEY); without it, no JWT access tokens. */
  keyEncryptionKey?: Buffer | undefined;
  /** The key encryption key being replaced (KEY_ENCRYPTION_KEY_PREVIOUS): what it encrypted still decrypts. */
  previousKeyEncryptionKey?: Buffer | undefined;
  /** A status list's `ttl` (STATUS_LIST_TTL_SECONDS). */
  statusListTtlSeconds?: number;
  /** Where webhooks may be sent (WEBHOOK_ALLOW_HTTP, WEBHOOK_ALLOW_PRIVATE); `SAFE_DESTINATIONS` by default. */
  webhookDestinations?: DestinationPolicy;
  /** How often the webhook sender asks for due deliveries; 1 s by default. */
  webhookPollMs?: number;
  /** How long a webhook delivery's attempt may take (WEBHOOK_TIMEOUT_SECONDS); 10 s by default. */
  webhookTimeoutMs?: number;
  /** Mail through the operator's SMTP server (SMTP_URL); none by default. Needs `keyEncryptionKey`. */
  mail?: MailOptions | undefined;
}

export function createTessera(options: TesseraOptions): Tessera {
  const { store } = options;
  const clock = options.clock ?? systemClock;
  const warn = options.onWarning ?? (() => {});
  const metrics = options.metrics ?? NO_METRICS;
  const capabilities = new Capabilities(
    store.upgrade.stateAtOpen,
    currentBuild(),
    async () => (await store.upgrade.read(clock.now() - INSTANCE_SEEN_WITHIN_MS)).state,
    options.upgradeFinalizeAfterMs ?? DEFAULT_FINALIZE_AFTER_MS,
  );
  const limits = createRateLimits(options.rateLimits ?? DEFAULT_RATE_LIMITS, warn, metrics);
  const events = new EventLog(store.events, clock, { onWarning: warn, onNotice: options.onNotice, metrics });
  const checking = createTokenChecking(store, {
    clock,
    onRefusedToken: (appId, clientAddress, problem) =>
      events.record(
        'token.refused',
        appId,
        anonymousRequest(clientAddress),
        null,
        problem === undefined ? { reason: 'invalid_token' } : { reason: 'invalid_token', problem },
      ),
    metrics,
    cacheMemoryMb: options.cacheMemoryMb,
  });
  const credentialUse = new CredentialUse(store.credentials, (error) =>
    warn('when a credential was last used could not be written; it is written at its next use', error),
  );
  const admins = new AdminAuthentication(limits, events, clock, credentialUse);
  const signInLimits = createSignInLimits(limits, options.signInLimits ?? DEFAULT_SIGN_IN_LIMITS, metrics);
  const links = { publicUrl: options.publicUrl };
  // Every service that acts on an app asks this first, whichever page, route or command calls it.
  const access = new AppAccess((appId, developerId) => store.developers.members.roleOf(appId, developerId));
  const apps = new AppService(store.apps, store, clock, events, access, capabilities, checking.forget);
  const encryption =
    options.keyEncryptionKey === undefined ? undefined : new KeyEncryption(options.keyEncryptionKey, options.previousKeyEncryptionKey);
  const mail = options.mail === undefined ? undefined : createMail(options.mail, store, clock, encryption, access, limits, metrics, warn);
  const developers = new DeveloperAccounts(store.developers, store, clock, signInLimits, { ...links, mail: mail?.accounts });
  const developerLimits = new DeveloperLimits(
    limits,
    options.developerLimits ?? DEFAULT_DEVELOPER_LIMITS,
    store.developers.accounts,
    clock,
    warn,
    metrics,
  );
  const credentials = new CredentialService(store, store.apps, clock, events, access, capabilities, checking.forget);
  const powSerials = new PowSerials((expiresAt) => store.attestation.reserveSerials(expiresAt));
  const pow = new ProofOfWork(
    () => checking.anonymous.keys.signingKey(),
    (id) => checking.anonymous.keys.key(id),
    (now) => (capabilities.allows('powSerialClaims') ? powSerials.next(now) : undefined),
  );
  const debugTokens = new DebugTokens(store, clock, events, access, warn);
  const playIntegrity: PlayIntegrity = new PlatformSettings(store, events, access, PLAY_INTEGRITY);
  const appAttest: AppAttest = new PlatformSettings(store, events, access, APP_ATTEST);
  const attestation = {
    pow,
    debugTokens,
    playIntegrity,
    appAttest,
    checker: new AttestationChecker(
      pow,
      debugTokens,
      playIntegrity,
      appAttest,
      store.attestation,
      store.attestation,
      new IssuanceRate(),
      clock,
      limits,
      metrics,
    ),
  };
  const refusalBursts = new RefusalBurstWatch(events, store, clock, warn);
  events.onRecord((type, appId, at, details) => refusalBursts.note(type, appId, at, details));
  const webhookSecrets = new WebhookSecrets(encryption);
  const webhookDestinations = options.webhookDestinations ?? SAFE_DESTINATIONS;
  const webhookSender = new WebhookSender(store.webhooks, webhookSecrets, {
    policy: webhookDestinations,
    clock,
    metrics,
    onWarning: warn,
    ...(options.webhookPollMs === undefined ? {} : { pollMs: options.webhookPollMs }),
    ...(options.webhookTimeoutMs === undefined ? {} : { timeoutMs: options.webhookTimeoutMs }),
  });
  const jwtKeys = new JwtKeyService(store.jwtKeys, clock, encryption, () => checking.jwts.forgetAll());
  const housekeeping = new Housekeeping(
    store,
    events,
    clock,
    options.housekeeping ?? DEFAULT_HOUSEKEEPING,
    (error) =>
      // With the database away the error is always the same 503, whose stack says nothing: the message says it all.
      isServiceUnavailable(error)
        ? warn('housekeeping could not run while the database cannot be reached; it is tried again at the next interval', undefined)
        : warn('housekeeping failed; it is tried again at the next interval', error),
    jwtKeys,
  );
  const statusLists = new StatusLists(store.statusLists, clock, jwtKeys, options.statusListTtlSeconds);
  const jwt: Jwt = { keys: jwtKeys, statusLists, issuer: new JwtIssuer(jwtKeys, statusLists, options.publicUrl) };
  store.onChange((change) => {
    if (change === 'anything') jwtKeys.forget();
  });
  const members = new AppMembers(store.developers, store, store.apps, clock, events, developerLimits, access, {
    ...links,
    onChange: checking.forget,
    mail: mail?.mail.outbox,
  });
  return {
    store,
    clock,
    apps,
    credentials,
    appCache: checking.apps,
    issuer: new TokenIssuer(
      store.tokens,
      checking.anonymous,
      clock,
      admins,
      events,
      async (appId) => {
        checking.apps.invalidate(appId);
        return checking.apps.get(appId);
      },
      capabilities,
      attestation.checker,
      jwt.issuer,
    ),
    admins,
    callers: new EndpointCallers(checking.authenticator, admins, events),
    checker: checking.tokens,
    revoker: new TokenRevoker(
      store.tokens,
      store.revokedTokens,
      checking.tokens,
      checking.anonymous,
      checking.revoked,
      events,
      statusLists,
      {
        clock,
        transactions: store,
        access,
        onChange: checking.forget,
        maxRevokedPerApp: options.revokedTokensMaxPerApp,
        metrics,
      },
    ),
    signingKeys: new SigningKeyService(store.signingKeys, clock, () => checking.anonymous.forgetAll()),
    authenticator: checking.authenticator,
    limits,
    events,
    appEvents: new AppEvents(events, access, clock, (appId) => store.apps.findById(appId)),
    developers,
    developerSessions: new DeveloperSessions(store.developers, store, clock, signInLimits),
    members,
    ownedApps: new OwnedApps(apps, developers, developerLimits),
    appImports: new AppImports(store.apps, store, store.developers.accounts, clock, events, checking.forget),
    housekeeping,
    webhooks: new WebhookService(store, clock, events, access, capabilities, webhookSecrets, webhookDestinations, () =>
      webhookSender.kick(),
    ),
    webhookSender,
    refusalBursts,
    metrics,
    capabilities,
    attestation,
    jwt,
    mail: mail?.mail,
    async close(keepTryingUntil) {
      await mail?.mail.sender.stop();
      await housekeeping.stop();
      await webhookSender.stop();
      await refusalBursts.stop();
      await events.close(keepTryingUntil);
      await limits.close();
      await store.close();
    },
  };
}

function createMail(
  options: MailOptions,
  store: Store,
  clock: Clock,
  encryption: KeyEncryption | undefined,
  access: AppAccess,
  limits: RateLimits,
  metrics: Metrics,
  warn: (message: string, error: unknown) => void,
) {
  if (encryption === undefined) {
    throw new Error(
      'Mail (SMTP_URL) needs a key encryption key (KEY_ENCRYPTION_KEY): the mail waiting to be sent holds one-time links, kept encrypted under it.',
    );
  }
  const outbox = new MailOutbox(encryption, clock, options.publicUrl.replace(/\/+$/, ''), options.bounds ?? DEFAULT_OUTBOX_BOUNDS, (kind) =>
    warn(`a mail (${kind}) was not written: as much mail as the outbox may hold is waiting for its address, or in all`, undefined),
  );
  const sender = new MailSender(
    store.mail,
    outbox,
    options.transport,
    new AlertMailer(store, outbox, clock),
    clock,
    metrics,
    options.sender ?? DEFAULT_MAIL_SENDER,
    warn,
  );
  return {
    mail: {
      outbox,
      sender,
      alerts: new AlertSettings(store.mail, (appId, developerId, context) =>
        access.authorizeDeveloper(appId, developerId, 'view_app', context),
      ),
    } satisfies Mail,
    accounts: {
      outbox,
      confirmations: new EmailConfirmations(encryption),
      limits: new MailRequestLimits(limits, options.requestLimits ?? DEFAULT_MAIL_REQUEST_LIMITS, () =>
        metrics.rateLimited('mail_requests'),
      ),
      onWarning: warn,
    },
  };
}
