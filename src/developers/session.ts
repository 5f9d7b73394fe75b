/**
 * A developer's session in the portal, kept server-side so that every instance sees it and it can
 * be ended: on sign-out, and all of a developer's on a password change or when the developer is
 * disabled. Lifetimes after OWASP ASVS 4.0.3 V3.3.2 (level 2): 30 minutes idle, 12 hours at most.
 */
export const SESSION_IDLE_MS = 30 * 60_000;
export const SESSION_MAX_MS = 12 * 3_600_000;
/** A session's last-seen time is written at most once a minute, not on every page. */
export const SESSION_TOUCH_INTERVAL_MS = 60_000;

export interface SessionRecord {
  /** The session token's id: the record's key, not secret. */
  id: string;
  secretHash: Buffer;
  developerId: string;
  /** UNIX ms. */
  createdAt: number;
  /** UNIX ms, to within `SESSION_TOUCH_INTERVAL_MS`. */
  lastSeenAt: number;
  /** UNIX ms: the session works before this instant only (the earlier of idle and absolute expiry). */
  expiresAt: number;
}

/** When a session created at `createdAt` and last seen at `lastSeenAt` stops working. */
export function sessionExpiry(createdAt: number, lastSeenAt: number): number {
  return Math.min(createdAt + SESSION_MAX_MS, lastSeenAt + SESSION_IDLE_MS);
}

/** Whether a session seen now should have its last-seen time (and so its idle expiry) written. */
export function needsTouch(session: SessionRecord, now: number): boolean {
  return now - session.lastSeenAt >= SESSION_TOUCH_INTERVAL_MS && session.expiresAt < session.createdAt + SESSION_MAX_MS;
}
