import type { AppRecord } from '../apps/app.js';
import { TesseraError } from '../errors.js';
import type { EventStamp, NewAuditEvent } from '../events/event.js';
import { actorOf, type RequestContext } from '../request-context.js';
import type { EventLog } from '../events/log.js';
import { TOKEN_SELECTOR, type Principal, type PrincipalKind } from '../principal.js';
import type { TokenChecker } from './checker.js';
import type { TokenStore } from './store.js';
import { parseAccessToken } from './token.js';

/** Which of an app's tokens a revoke-all removes: one kind, or `all`, always spelled out. */
export type RevocationKind = PrincipalKind | 'all';

export const REVOCATION_KINDS: readonly RevocationKind[] = ['admin', 'anonymous', 'all'];

/**
 * The kind of a revoke-all (`DELETE …/tokens?kind=`, `tessera tokens revoke-all --kind`), exactly as
 * spelled, or undefined for anything else: no default, no case folding. A typo or an unset variable
 * must never read as "all".
 */
export function revocationKind(value: unknown): RevocationKind | undefined {
  return REVOCATION_KINDS.find((kind) => kind === value);
}

/** The `token.revoked` event of a revoke-all that removed `count` tokens. */
export function appTokensRevoked(stamp: EventStamp, kind: RevocationKind, count: number): NewAuditEvent {
  return { ...stamp, type: 'token.revoked', details: { kind, scope: 'app', count } };
}

/**
 * Revokes tokens: one (RFC 7009), or every token of an app or of one kind, each with its
 * `token.revoked` event. The checker forgets what is revoked, so the next check refuses it.
 */
export class TokenRevoker {
  constructor(
    private readonly tokens: TokenStore,
    private readonly checker: TokenChecker,
    private readonly events: EventLog,
  ) {}

  /**
   * Revokes `accessToken` if it is a token of this app (an unknown one is not an error). An admin
   * may revoke any token of its app; anyone else only the token it authenticates with.
   */
  async revoke(app: AppRecord, accessToken: string, context: RequestContext): Promise<void> {
    const caller = context.by;
    if (caller !== 'operator' && (caller === null || (caller.kind !== 'admin' && !isOwnToken(caller, accessToken)))) {
      throw new TesseraError('ADMIN_REQUIRED', 'Only an admin token may revoke a token other than the one it is sent with.');
    }
    const matched = await this.checker.match(app, accessToken);
    if (matched === undefined) return;
    // Forget it before and after the delete: a check that read the record meanwhile does not cache it.
    this.checker.forget(matched.key);
    if (!(await this.tokens.delete(matched.selector))) return;
    this.checker.forget(matched.key);
    this.events.record('token.revoked', app.appId, context, actorOf(context), { kind: matched.facts.kind, scope: 'token', count: 1 });
  }

  /**
   * Revokes every token of an app, or every one of a kind, with its `token.revoked` event in the same
   * transaction; returns how many there were.
   */
  async revokeAll(appId: string, kind: RevocationKind, context: RequestContext): Promise<number> {
    const stamp = await this.events.stamp(appId, context);
    const count = await this.tokens.deleteByApp(appId, kind, (removed) => [appTokensRevoked(stamp, kind, removed)]);
    this.checker.forgetAll();
    return count;
  }
}

/** Whether `accessToken` is the token `caller` was authenticated with (the same selector; the store then checks its verifier). */
function isOwnToken(caller: Principal, accessToken: string): boolean {
  const own = caller[TOKEN_SELECTOR];
  return own !== undefined && parseAccessToken(accessToken)?.selector.toString('latin1') === own;
}
