import type { Capabilities } from '../upgrade/capabilities.js';
import type { AppRecord } from 'tessera-tokens/internal/apps/app.js';
import type { Clock } from 'tessera-tokens/internal/clock.js';
import { credentialsEqual } from 'tessera-tokens/internal/crypto.js';
import type { AdminAuthentication, AuthenticatedAdmin } from './client-authentication.js';
import type { CredentialRecord } from 'tessera-tokens/internal/credentials/credential.js';
import { scopeProblemText } from '../credentials/input.js';
import { narrowScopes } from 'tessera-tokens/internal/credentials/scopes.js';
import { parseScopeParameter } from './request.js';
import { appNotFound } from 'tessera-tokens/internal/error-catalogue.js';
import { TesseraError } from 'tessera-tokens/internal/errors.js';
import { invalidClient, type ClientCredentials } from './client-credentials.js';
import type { EventDetails } from '../events/event.js';
import type { EventLog } from '../events/log.js';
import { ANONYMOUS_ID, type PrincipalKind } from 'tessera-tokens/internal/principal.js';
import type { RequestContext } from '../request-context.js';
import type { AnonymousTokens } from 'tessera-tokens/internal/tokens/anonymous-tokens.js';
import { refuseBrowserAdminAttempt } from './browser-admin-attempts.js';
import { expiresInSeconds, resolveExpiry } from 'tessera-tokens/internal/tokens/expiry.js';
import type { TokenStore } from './store.js';
import { jwtExpiry, type JwtIssuer } from '../jwt/issuer.js';
import type { AttestationChecker } from '../attestation/checker.js';
import { attestationRefusal } from '../attestation/refusal.js';
import { reasonOf, type AttestationReason } from '../attestation/outcome.js';
import type { AttestationProvider } from 'tessera-tokens/internal/principal.js';
import { generateAccessToken } from 'tessera-tokens/internal/tokens/token.js';

const UNATTESTED = { provider: null, reason: null } as const;

/** A token request, parsed: who asks, and until when the token should work. */
export interface TokenRequestInput {
  credentials: ClientCredentials;
  /** UNIX ms, or null for a token that never expires. */
  expiresAt: number | null;
  /** RFC 6749 §3.3 `scope`, as sent (`TokenRequest.scope`); undefined when absent. */
  scope?: unknown;
  /** `X-Tessera-Attestation`, as sent; undefined when absent. Read for anonymous tokens only. */
  attestation?: string | undefined;
}

export interface IssuedToken {
  /** The app's admin id for an admin token, `ANONYMOUS` for an anonymous one. */
  id: string;
  accessToken: string;
  /** Seconds from the request to the expiry, rounded down (`NEVER_EXPIRES_IN` for never). */
  expiresIn: number;
  kind: PrincipalKind;
  /** What the token may do, when it was issued from a credential; null: everything an admin may (the app's own ClientID), or anonymous. */
  scopes: readonly string[] | null;
}

/**
 * Issues tokens for an app's credentials: authenticates the client (with the limits on failed admin
 * attempts), applies the app's maximum lifetime, and makes the token: an admin token is stored, an
 * anonymous one is self-verifying and writes nothing. Records the event. Knows nothing of HTTP.
 */
export class TokenIssuer {
  constructor(
    private readonly tokens: TokenStore,
    private readonly anonymous: AnonymousTokens,
    private readonly clock: Clock,
    private readonly admins: AdminAuthentication,
    private readonly events: EventLog,
    /** The app as the store has it now (not as a cache had it): after a rotation or revocation raced a token request. */
    private readonly reload: (appId: string) => Promise<AppRecord | undefined>,
    /** Whether every instance can check a self-verifying anonymous token (`src/upgrade/`). */
    private readonly capabilities: Capabilities,
    /** What an anonymous token request's attestation is worth, for the apps that ask for one. */
    private readonly attestations: AttestationChecker,
    /** JWT access tokens, for the apps whose `accessTokenFormat` is `jwt`. */
    private readonly jwt: JwtIssuer,
  ) {}

  async issue(
    app: AppRecord,
    { credentials, expiresAt: requested, scope, attestation }: TokenRequestInput,
    context: RequestContext,
  ): Promise<IssuedToken> {
    const now = this.clock.now();
    const client = await this.#authenticateClient(app, credentials, context);
    if (client.kind === 'anonymous') {
      const expiresAt = resolveExpiry(now, requested, app.configuration.anonymousTokenMaxLifetimeSeconds);
      const attested = app.configuration.anonymousAttestation === 'off' ? UNATTESTED : await this.#attest(app, attestation, now, context);
      const issued = await this.#anonymousToken(app, now, expiresAt, attested.provider);
      const details: EventDetails =
        issued.format === 'jwt' ? { expiresAt: issued.expiresAt, format: 'jwt' } : { expiresAt: issued.expiresAt };
      if (attested.reason !== null) details.reason = attested.reason;
      this.events.record('token.issued', app.appId, context, 'anonymous', details);
      return {
        id: ANONYMOUS_ID,
        accessToken: issued.token,
        expiresIn: expiresInSeconds(now, issued.expiresAt),
        kind: 'anonymous',
        scopes: null,
      };
    }
    let admin: AuthenticatedAdmin = client;
    let current = app;
    for (let attempt = 1; ; attempt++) {
      const { secret, credential } = admin;
      const scopes = grantedScopes(credential, scope);
      const resolved = resolveExpiry(now, requested, current.configuration.adminTokenMaxLifetimeSeconds);
      // A token issued from a credential never outlives it.
      const opaqueExpiresAt =
        credential?.expiresAt == null || (resolved !== null && resolved <= credential.expiresAt) ? resolved : credential.expiresAt;
      const clientId = credential?.clientId ?? null;
      const { token, selector, verifierHash, statusIndex, expiresAt } = this.#issuesJwt(current, credential)
        ? await this.jwt.admin(current, {
            now,
            expiresAt: jwtExpiry(now, opaqueExpiresAt),
            adminId: current.adminId,
            clientId: clientId ?? current.clientId,
            scopes,
          })
        : { ...generateAccessToken(now), statusIndex: null, expiresAt: opaqueExpiresAt };
      const record = {
        selector,
        verifierHash,
        appId: app.appId,
        kind: 'admin' as const,
        issuedAt: now,
        expiresAt,
        clientId,
        scopes,
        statusIndex,
      };
      if ((await this.tokens.insert(record, current.adminGeneration)) !== undefined) {
        // Which secret an admin token was issued with, so that the operator sees when, after a rotation
        // with a grace period, the previous one is no longer used; and from which credential, with what.
        this.events.record(
          'token.issued',
          app.appId,
          context,
          'admin',
          clientId === null && scopes === null ? { expiresAt, secret } : { expiresAt, secret, clientId, scopes },
        );
        return { id: current.adminId, accessToken: token, expiresIn: expiresInSeconds(now, expiresAt), kind: 'admin', scopes };
      }
      // A rotation or revocation committed since the app was read (on another instance, or while
      // the insert waited its turn): what the request is worth is decided anew, on the app as it now is.
      if (attempt === MAX_ISSUE_ATTEMPTS) throw appChangingTooOften();
      const reloaded = await this.reload(app.appId);
      if (reloaded === undefined) throw appNotFound();
      current = reloaded;
      admin = await this.admins.authenticate(current, credentials, context);
    }
  }

  /**
   * An anonymous token of the app's format: a JWT (its expiry capped, `jwtExpiry`), a self-verifying
   * token, or, while an instance of a release before them serves, a stored one.
   */
  async #anonymousToken(
    app: AppRecord,
    now: number,
    expiresAt: number | null,
    attestation: AttestationProvider | null,
  ): Promise<{ token: string; expiresAt: number | null; format: 'jwt' | 'opaque' }> {
    if (this.#issuesJwt(app)) {
      const jwtExpiresAt = jwtExpiry(now, expiresAt);
      // After the app's cut-off, even if this instance's clock is behind the one that set it (as a self-verifying token's).
      const issuedAt = app.anonymousCutoff !== null && app.anonymousCutoff >= now ? app.anonymousCutoff + 1 : now;
      return { token: await this.jwt.anonymous(app, issuedAt, jwtExpiresAt, attestation), expiresAt: jwtExpiresAt, format: 'jwt' };
    }
    const { token } = this.capabilities.allows('selfVerifyingAnonymousTokens')
      ? await this.anonymous.issue(app, now, expiresAt, attestation)
      : await this.#storedAnonymousToken(app, now, expiresAt);
    return { token, expiresAt, format: 'opaque' };
  }

  /** Whether the tokens are JWTs: the credential's format, or else the app's, says so, and every instance reads them. */
  #issuesJwt(app: AppRecord, credential?: CredentialRecord | null): boolean {
    const format = credential?.accessTokenFormat ?? app.configuration.accessTokenFormat;
    return format === 'jwt' && this.capabilities.allows('jwtAccessTokens');
  }

  /**
   * The app's attestation mode applied: `off` reads nothing; `monitor` classifies the request and
   * serves it; `enforce` refuses one without a valid attestation (`401`, with a `token.refused`
   * event saying why). The provider goes into the token only once every instance reads tokens that
   * carry one (`anonymousAttestation`, `src/upgrade/capabilities.ts`).
   */
  async #attest(
    app: AppRecord,
    header: string | undefined,
    now: number,
    context: RequestContext,
  ): Promise<{ provider: AttestationProvider | null; reason: AttestationReason | null }> {
    const mode = app.configuration.anonymousAttestation;
    this.attestations.rate.note(app, now);
    if (mode === 'enforce') await this.attestations.checkAddress(context.clientAddress);
    const outcome = await this.attestations.check(app, header, mode === 'enforce' ? context.clientAddress : null);
    const reason = reasonOf(outcome);
    if (outcome.verdict === 'verified') {
      return { provider: this.capabilities.allows('anonymousAttestation') ? outcome.provider : null, reason };
    }
    if (mode === 'monitor') return { provider: null, reason };
    const problem = outcome.verdict === 'invalid' ? outcome.problem : null;
    this.events.record('token.refused', app.appId, context, 'anonymous', {
      reason,
      ...(outcome.verdict === 'missing' ? {} : { provider: outcome.provider }),
      ...(problem === null ? {} : { problem }),
    });
    throw attestationRefusal(outcome, app.appId);
  }

  /**
   * An anonymous token stored as release 0.1.0 stores them, which an instance of it, serving beside
   * this one during a rolling upgrade, accepts and revokes: until the store is finalized.
   */
  async #storedAnonymousToken(app: AppRecord, now: number, expiresAt: number | null): Promise<{ token: string }> {
    let current = app;
    for (let attempt = 1; ; attempt++) {
      const { token, selector, verifierHash } = generateAccessToken(now);
      const record = {
        selector,
        verifierHash,
        appId: app.appId,
        kind: 'anonymous' as const,
        issuedAt: now,
        expiresAt,
        clientId: null,
        scopes: null,
      };
      if ((await this.tokens.insert(record, current.adminGeneration)) !== undefined) return { token };
      if (attempt === MAX_ISSUE_ATTEMPTS) throw appChangingTooOften();
      const reloaded = await this.reload(app.appId);
      if (reloaded === undefined) throw appNotFound();
      current = reloaded;
    }
  }

  /**
   * `client_id` = AppID: anonymous (the AppKey is checked only if the app asks for it).
   * Anything else is an admin attempt: an unknown ClientID and a wrong ClientSecret take the same
   * path, do the same work, and fail the same way; from a browser, every admin attempt is refused.
   */
  async #authenticateClient(
    app: AppRecord,
    credentials: ClientCredentials,
    context: RequestContext,
  ): Promise<{ kind: 'anonymous' } | ({ kind: 'admin' } & AuthenticatedAdmin)> {
    if (credentials.clientId === app.appId) {
      if (app.configuration.requireAppKey && !credentialsEqual(credentials.clientSecret, app.appKey)) {
        this.events.record('token.refused', app.appId, context, 'anonymous', { reason: 'invalid_client' });
        throw invalidClient();
      }
      return { kind: 'anonymous' };
    }
    const { origin } = context;
    if (origin !== undefined) return refuseBrowserAdminAttempt(this.admins, this.events, app, credentials, { ...context, origin });
    return { kind: 'admin', ...(await this.admins.authenticate(app, credentials, context)) };
  }
}

/** Tries at storing a token while revocations keep changing its app, before the request is answered 503. */
const MAX_ISSUE_ATTEMPTS = 3;

function appChangingTooOften(): TesseraError {
  return new TesseraError(
    'SERVICE_UNAVAILABLE',
    'The app\u2019s secrets or tokens were changed while this token was being issued, several times over; try again.',
    { retryAfterSeconds: 1 },
  );
}

/**
 * The scopes of a new admin token: a credential's, narrowed by `scope` if the request names some
 * (RFC 6749 §3.3; more than the credential's is `invalid_scope`). The app's own ClientID, and the
 * anonymous client, ignore `scope` as they always have (RFC 6749 lets a server ignore it): every
 * integration that sends one keeps the token it had (docs/decisions.md, "Credentials and scopes").
 */
function grantedScopes(credential: CredentialRecord | null, scopeParameter: unknown): readonly string[] | null {
  if (credential === null) return null;
  const scope = parseScopeParameter(scopeParameter);
  if (scope === undefined) return credential.scopes;
  const narrowed = narrowScopes(credential.scopes, scope);
  if ('problem' in narrowed) throw new TesseraError('invalid_scope', `scope ${scopeProblemText(narrowed.problem)}`);
  return narrowed.scopes;
}
