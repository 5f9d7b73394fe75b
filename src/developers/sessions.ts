import type { Clock } from 'tessera-tokens/internal/clock.js';
import { invalidCredentials } from 'tessera-tokens/internal/error-catalogue.js';
import type { RequestContext } from '../request-context.js';
import type { DeveloperRecord } from './developer.js';
import { generateSecretToken, parseSecretToken, secretMatches } from './secret-token.js';
import { needsTouch, sessionExpiry, type SessionRecord } from './session.js';
import { checkCredentials, type SignInCredentials } from './sign-in.js';
import { deviceTokenFor } from './trusted-device.js';
import type { SignInLimits } from './sign-in-limits.js';
import { developerStamp } from './stamp.js';
import type { Transactional } from 'tessera-tokens/internal/transaction.js';
import { writeAccountAudit, type AccountTables } from './account-audit.js';
import type { DeveloperStore } from './store.js';

/** A session just started: its token (for the cookie) appears only here. */
export interface StartedSession {
  token: string;
  /** A new device token for the browser (`trusted-device.ts`); null for an account without a password. */
  deviceToken: string | null;
  session: SessionRecord;
  developer: DeveloperRecord;
}

/** A session presented and found working. */
export interface CurrentSession {
  session: SessionRecord;
  developer: DeveloperRecord;
}

/**
 * The portal's server-side sessions (`session.ts`): sign-in, the check of every request's session
 * token, sign-out. Stored, so that every instance sees them and ending one ends it everywhere.
 */
export class DeveloperSessions {
  constructor(
    private readonly store: DeveloperStore,
    private readonly transactions: Transactional<AccountTables>,
    private readonly clock: Clock,
    private readonly limits: SignInLimits,
  ) {}

  /** Checks the credentials (`checkCredentials`) and starts a session. */
  async signIn(credentials: SignInCredentials, context: RequestContext): Promise<StartedSession> {
    const developer = await checkCredentials(this.store.accounts, this.limits, credentials);
    return this.start(developer, context);
  }

  /**
   * Starts a session for a developer who has just proved who they are otherwise (a password set
   * through a one-time link, a password change). `INVALID_CREDENTIALS` if it was disabled meanwhile.
   */
  async start(developer: DeveloperRecord, context: RequestContext): Promise<StartedSession> {
    const now = this.clock.now();
    const secret = generateSecretToken();
    const session: SessionRecord = {
      id: secret.id,
      secretHash: secret.secretHash,
      developerId: developer.id,
      createdAt: now,
      lastSeenAt: now,
      expiresAt: sessionExpiry(now, now),
    };
    const stamp = developerStamp(developer.id, now, context);
    await this.transactions.transaction(async (tx) => {
      if ((await tx.developers.sessions.insert(session)) === undefined) throw invalidCredentials();
      await writeAccountAudit(tx, { developer: [{ ...stamp, type: 'developer.signed_in', details: { sessionId: session.id } }] });
    });
    return { token: secret.token, deviceToken: deviceTokenFor(developer), session, developer };
  }

  /**
   * The session and developer of a presented session token, if it works now: it exists, its secret
   * matches, it has not expired and its developer is enabled. A request a person made pushes its
   * idle expiry on (written at most once a minute); one a page makes by itself (`background`, the
   * events page's polling) does not, so that a browser left open on such a page still meets the
   * idle timeout.
   */
  async current(token: string, { background = false }: { background?: boolean } = {}): Promise<CurrentSession | undefined> {
    const presented = parseSecretToken(token);
    if (presented === undefined) return undefined;
    const session = await this.store.sessions.findById(presented.id);
    const now = this.clock.now();
    if (session === undefined || !secretMatches(presented, session.secretHash) || session.expiresAt <= now) return undefined;
    const developer = await this.store.accounts.findById(session.developerId);
    if (developer === undefined || developer.disabledAt !== null) return undefined;
    if (background || !needsTouch(session, now)) return { session, developer };
    const touched = { ...session, lastSeenAt: now, expiresAt: sessionExpiry(session.createdAt, now) };
    await this.store.sessions.touch(session.id, touched.lastSeenAt, touched.expiresAt);
    return { session: touched, developer };
  }

  /** Ends the session of a presented token (sign-out); false if it was not a working session. */
  async signOut(token: string, context: RequestContext): Promise<boolean> {
    const current = await this.current(token);
    if (current === undefined) return false;
    const stamp = developerStamp(current.developer.id, this.clock.now(), context);
    return this.transactions.transaction(async (tx) => {
      if ((await tx.developers.sessions.delete(current.session.id)) === undefined) return false;
      await writeAccountAudit(tx, { developer: [{ ...stamp, type: 'developer.signed_out', details: { sessionId: current.session.id } }] });
      return true;
    });
  }
}
