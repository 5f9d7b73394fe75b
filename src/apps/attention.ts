import { eventCountQuery, type EventCountsDescription } from '../events/counts.js';
import type { EventLog } from '../events/log.js';
import type { AuditEvent } from '../events/event.js';
import type { AppRecord } from 'tessera-tokens/internal/apps/app.js';
import { secretExposures, stillLeaked, type SecretExposure } from './secret-exposure.js';

/** What about an app calls for its developer's attention, as the portal's list of apps flags it. */
export interface AppAttention {
  /** The app's ClientSecret, or a credential's, sent from a web page and still working (not rotated since, or in a rotation's grace period), newest first. */
  leakedSecrets: SecretExposure[];
  /** The busiest minute of the last hour for token requests refused for their keys, when it reached `REFUSAL_BURST_PER_MINUTE`; null otherwise. */
  refusalBurst: RefusalBurst | null;
  /**
   * Credentials whose right secret was sent from an address they do not allow in the last hour
   * (`credential.refused`, `address_not_allowed`), still not revoked: a leaked secret at work, or a
   * service that moved. The newest refusal of each.
   */
  refusedElsewhere: RefusedElsewhere[];
}

export interface RefusedElsewhere {
  clientId: string;
  name: string;
  /** ISO 8601. */
  at: string;
  clientAddress: string | null;
}

export interface RefusalBurst {
  /** The start of the minute (ISO 8601, UTC). */
  minute: string;
  /** Token requests refused in it for their keys, throttled ones included. */
  refused: number;
  /** Of those, admin attempts throttled (429) after too many wrong secrets. */
  throttled: number;
}

/**
 * Token requests refused for their keys in one minute that make a burst: as many wrong ClientSecrets as one address
 * may send an app in a minute before it is throttled, by default. A person mistyping a secret does
 * not get there; a script guessing, or a deployment with an old secret, does within seconds.
 */
export const REFUSAL_BURST_PER_MINUTE = 10;

/** How far back the list of apps looks for a burst. */
export const REFUSAL_BURST_WINDOW_MS = 3_600_000;

/**
 * Token requests refused for their keys: a wrong ClientSecret or AppKey (`token.refused`
 * `invalid_client`), an admin attempt throttled after too many (`token.throttled`), a credential's
 * right secret from the wrong address or after its expiry (`credential.refused`). A refused bearer
 * token (`invalid_token`) is left out: clients that still hold expired tokens send those all day.
 */
export function isKeyRefusal(kind: { type: string; reason: string | null }): boolean {
  if (kind.type === 'token.refused') return kind.reason !== 'invalid_token';
  return kind.type === 'token.throttled' || kind.type === 'credential.refused';
}

/** The minute with the most token requests refused for their keys, when they reached `REFUSAL_BURST_PER_MINUTE` (the earliest of equals). */
export function refusalBurstOf(counts: EventCountsDescription): RefusalBurst | null {
  let busiest: RefusalBurst | null = null;
  for (const bucket of counts.buckets) {
    let refused = 0;
    let throttled = 0;
    for (const kind of bucket.counts) {
      if (isKeyRefusal(kind)) refused += kind.count;
      if (kind.type === 'token.throttled') throttled += kind.count;
    }
    if (refused >= REFUSAL_BURST_PER_MINUTE && refused > (busiest?.refused ?? 0)) busiest = { minute: bucket.start, refused, throttled };
  }
  return busiest;
}

/** The app's attention: its leaked secrets that still work, and a burst of refusals in the last hour. */
export async function appAttention(log: EventLog, app: AppRecord, now: number): Promise<AppAttention> {
  const lastHour = eventCountQuery({ per: 'minute', since: now - REFUSAL_BURST_WINDOW_MS + 1, until: now + 1 }, now);
  const [exposures, counts, refusals] = await Promise.all([
    secretExposures(log, app, now),
    log.counts(app.appId, lastHour),
    app.credentials.length === 0 ? [] : log.lastChanges(app.appId, 'credential.refused', 100),
  ]);
  return {
    leakedSecrets: exposures.filter(stillLeaked),
    refusalBurst: refusalBurstOf(counts),
    refusedElsewhere: refusedElsewhere(app, refusals, now),
  };
}

/** Of the app's credentials, those refused for their address in the last hour (`AppAttention.refusedElsewhere`). */
function refusedElsewhere(app: AppRecord, refusals: readonly AuditEvent[], now: number): RefusedElsewhere[] {
  const flagged = new Map<string, RefusedElsewhere>();
  for (const event of refusals) {
    const { clientId, reason } = event.details;
    if (event.at <= now - REFUSAL_BURST_WINDOW_MS || reason !== 'address_not_allowed' || typeof clientId !== 'string') continue;
    const credential = app.credentials.find((candidate) => candidate.clientId === clientId);
    if (credential === undefined || flagged.has(clientId)) continue;
    flagged.set(clientId, { clientId, name: credential.name, at: new Date(event.at).toISOString(), clientAddress: event.clientAddress });
  }
  return [...flagged.values()];
}
