import type { AppAccess } from '../app-access.js';
import type { AppRecord } from 'tessera-tokens/internal/apps/app.js';
import type { Clock } from 'tessera-tokens/internal/clock.js';
import { insufficientScope } from 'tessera-tokens/internal/error-catalogue.js';
import { TesseraError } from 'tessera-tokens/internal/errors.js';
import { TOKEN_SELECTOR } from 'tessera-tokens/internal/principal.js';
import { appTokensRevoked, type RevocationKind } from '../apps/revoke-all.js';
import { actorOf, type RequestContext } from '../request-context.js';
import type { EventLog } from '../events/log.js';
import { NO_METRICS, type Metrics } from '../metrics/port.js';
import { ANONYMOUS_TOKEN_LENGTH, type AnonymousTokenFacts } from 'tessera-tokens/internal/tokens/anonymous-token.js';
import type { JwtAccessToken } from 'tessera-tokens/internal/jwt/access-token.js';
import type { StatusLists } from '../jwt/status-lists.js';
import { anonymousFactsOf, type AnonymousTokens } from 'tessera-tokens/internal/tokens/anonymous-tokens.js';
import type { TokenChecker } from 'tessera-tokens/internal/tokens/checker.js';
import type { RevokedTokenStore } from './revoked-token-store.js';
import type { RevokedTokens } from 'tessera-tokens/internal/tokens/revoked-tokens.js';
import type { TokenStore } from './store.js';
import type { EventStore } from '../events/store.js';
import type { Transactional } from 'tessera-tokens/internal/transaction.js';

/** Anonymous tokens of one app that callers other than its admin may revoke one by one and keep revoked (REVOKED_TOKENS_MAX_PER_APP). */
export const DEFAULT_MAX_REVOKED_PER_APP = 100_000;

/** What a revoke-all did. */
export interface AppRevocation {
  /** Stored tokens removed: admin tokens, and anonymous tokens issued before they were self-verifying. */
  revoked: number;
  /** With anonymous tokens: every one issued at or before this instant (UNIX ms) is refused from now on. */
  anonymousCutoff: number | null;
}

/**
 * The answer to a revoke-all (API and CLI): `revoked` counts the stored tokens removed;
 * `anonymousCutoff`, with anonymous tokens, is the instant up to which every anonymous token of
 * the app is refused; `message` says what happened in words, since `revoked` alone (0 for
 * anonymous tokens, which are not stored) reads as if nothing had.
 */
export function describeAppRevocation(appId: string, kind: RevocationKind, { revoked, anonymousCutoff }: AppRevocation) {
  if (anonymousCutoff === null) {
    return { appId, kind, revoked, message: `Every admin token of app ${appId} is refused from now on (${revoked} revoked).` };
  }
  const cutoff = new Date(anonymousCutoff).toISOString();
  const message =
    kind === 'anonymous'
      ? `Every anonymous token of app ${appId} issued up to ${cutoff} is refused from now on.`
      : `Every admin token of app ${appId}, and every anonymous token issued up to ${cutoff}, is refused from now on.`;
  return { appId, kind, revoked, anonymousCutoff: cutoff, message };
}

export interface TokenRevokerOptions {
  clock: Clock;
  /** Where a revoke-all and its event are written together. */
  transactions: Transactional<{ readonly tokens: TokenStore; readonly events: EventStore }>;
  /** Who may revoke every token of an app. */
  access: AppAccess;
  /** Called after a revoke-all, so that this process's caches drop the app at once. */
  onChange?: (appId: string) => void;
  maxRevokedPerApp?: number;
  metrics?: Metrics;
}

/**
 * Revokes tokens: one (RFC 7009), or every token of an app or of one kind, each with its
 * `token.revoked` event. The checker forgets what is revoked, so the next check refuses it.
 */
export class TokenRevoker {
  readonly #clock: Clock;
  readonly #transactions: TokenRevokerOptions['transactions'];
  readonly #access: AppAccess;
  readonly #onChange: (appId: string) => void;
  readonly #maxRevokedPerApp: number;
  readonly #metrics: Metrics;

  constructor(
    private readonly tokens: TokenStore,
    private readonly revokedTokens: RevokedTokenStore,
    private readonly checker: TokenChecker,
    /** The checker's self-verifying anonymous tokens, and those of them revoked one by one, in memory. */
    private readonly anonymous: AnonymousTokens,
    private readonly revokedAnonymous: RevokedTokens,
    private readonly events: EventLog,
    /** Where an anonymous JWT's revocation is published. */
    private readonly statusLists: StatusLists,
    options: TokenRevokerOptions,
  ) {
    this.#clock = options.clock;
    this.#transactions = options.transactions;
    this.#access = options.access;
    this.#onChange = options.onChange ?? (() => {});
    this.#maxRevokedPerApp = options.maxRevokedPerApp ?? DEFAULT_MAX_REVOKED_PER_APP;
    this.#metrics = options.metrics ?? NO_METRICS;
  }

  /**
   * Revokes `accessToken` if it is a token of this app (an unknown one is not an error). An admin
   * may revoke any token of its app, one with scopes only with `tokens:revoke`; any other caller of
   * the app any anonymous token of the app it presents (RFC 7009: they are all issued to the client
   * AppID, and whoever holds one could revoke it with itself), and its own token, but no other
   * admin token.
   */
  async revoke(app: AppRecord, accessToken: string, context: RequestContext): Promise<void> {
    const caller = context.by;
    if (caller === null || (caller !== 'operator' && caller.kind === 'developer')) throw adminRequiredToRevoke();
    const byAdmin =
      caller === 'operator' || (caller.kind === 'admin' && (caller.scopes === null || caller.scopes.includes('tokens:revoke')));
    if (accessToken.length === ANONYMOUS_TOKEN_LENGTH) return this.#revokeAnonymous(app, accessToken, context, byAdmin);
    const jwt = await this.checker.jwt(app, accessToken);
    if (jwt?.kind === 'anonymous') return this.#revokeAnonymousJwt(app, jwt, context, byAdmin);
    const matched = await this.checker.match(app, accessToken);
    if (matched === undefined) return;
    if (!byAdmin && matched.facts.kind === 'admin' && caller[TOKEN_SELECTOR] !== matched.key) {
      throw caller.kind === 'admin' ? insufficientScope('tokens:revoke') : adminRequiredToRevoke();
    }
    // Forget it before and after the delete: a check that read the record meanwhile does not cache it.
    this.checker.forget(matched.key);
    if ((await this.tokens.delete(matched.selector)) === undefined) return;
    this.checker.forget(matched.key);
    this.#metrics.tokensRevoked(matched.facts.kind, 1);
    this.events.record('token.revoked', app.appId, context, actorOf(context), { kind: matched.facts.kind, scope: 'token', count: 1 });
  }

  /**
   * Revokes every token of an app, or every one of a kind, with its `token.revoked` event in the same
   * transaction. Anonymous tokens are ended by the app's cut-off, set to now. The operator, the app's
   * admin token or a member of the app.
   */
  async revokeAll(appId: string, kind: RevocationKind, context: RequestContext): Promise<AppRevocation> {
    await this.#access.authorize(appId, 'revoke_tokens', context);
    const stamp = await this.events.stamp(appId, context);
    const at = this.#clock.now();
    const anonymousCutoff = kind === 'admin' ? null : at;
    const revoked = await this.#transactions.transaction(async (tx) => {
      const removed = await tx.tokens.revokeAll(appId, kind, at);
      await tx.events.append([appTokensRevoked(stamp, kind, removed, context, anonymousCutoff)]);
      return removed;
    });
    this.checker.forgetAll();
    if (kind !== 'admin') this.revokedAnonymous.forgetApp(appId);
    this.#onChange(appId);
    // The stored tokens removed: with `all`, admin tokens (and anonymous ones from before they were
    // self-verifying); self-verifying tokens ended by the cut-off are not counted, their number is unknown.
    this.#metrics.tokensRevoked(kind === 'anonymous' ? 'anonymous' : 'admin', revoked);
    return { revoked, anonymousCutoff };
  }

  /**
   * A self-verifying token cannot be deleted: its id is kept until it expires. Nothing is kept for
   * one that has ended already; callers other than an admin may keep at most `maxRevokedPerApp`.
   */
  async #revokeAnonymous(app: AppRecord, accessToken: string, context: RequestContext, byAdmin: boolean): Promise<void> {
    const facts = await this.anonymous.verify(app, accessToken);
    if (facts === undefined || this.anonymous.ended(app, facts)) return;
    await this.#keepRevoked(app, facts, context, byAdmin);
  }

  /** An anonymous JWT: its bit in its status list is set first (offline verifiers see it), then it is kept revoked as a self-verifying token is. */
  async #revokeAnonymousJwt(app: AppRecord, jwt: JwtAccessToken, context: RequestContext, byAdmin: boolean): Promise<void> {
    const facts = anonymousFactsOf(jwt);
    if (this.anonymous.ended(app, facts)) return;
    await this.#limitRevocations(app, byAdmin);
    const index = this.statusLists.indexOf(jwt.status);
    if (index !== undefined) await this.statusLists.revoke(index, jwt.expiresAt);
    await this.#keepRevoked(app, facts, context, byAdmin);
  }

  async #limitRevocations(app: AppRecord, byAdmin: boolean): Promise<void> {
    if (!byAdmin && (await this.revokedAnonymous.countOf(app.appId)) >= this.#maxRevokedPerApp) {
      throw new TesseraError('TOO_MANY_REQUESTS', 'Too many tokens of this app are revoked one by one; its admin can revoke them all.', {
        retryAfterSeconds: 60,
      });
    }
  }

  async #keepRevoked(app: AppRecord, facts: AnonymousTokenFacts, context: RequestContext, byAdmin: boolean): Promise<void> {
    await this.#limitRevocations(app, byAdmin);
    const revocation = { id: facts.id, appId: app.appId, expiresAt: facts.expiresAt };
    const added = await this.revokedTokens.add(revocation);
    this.revokedAnonymous.remember(revocation);
    if (added === undefined) return;
    this.#metrics.tokensRevoked('anonymous', 1);
    this.events.record('token.revoked', app.appId, context, actorOf(context), { kind: 'anonymous', scope: 'token', count: 1 });
  }
}

function adminRequiredToRevoke(): TesseraError {
  return new TesseraError('ADMIN_REQUIRED', 'Only the app admin may revoke an admin token other than the one it is sent with.');
}
