import type { EventLog } from '../events/log.js';

/** The last time the app's ClientSecret was sent from a browser (`app.secret_exposed`), as the operator is shown it. */
export interface SecretExposure {
  /** ISO 8601. */
  lastExposedAt: string;
  /** The page's origin, or null when it was opaque or malformed. */
  origin: string | null;
  clientAddress: string | null;
  /** Which of the app's secrets was sent (`current`, …). */
  secret: string | null;
  /** When the secret was rotated after that exposure (ISO 8601), or null when it was not: then rotate it. */
  rotatedAt: string | null;
}

/**
 * The app's last secret exposure still in its audit log, and whether a rotation followed it; null
 * when there is none. Events are kept for `EVENTS_RETENTION_DAYS`, so an older one is not shown.
 */
export async function lastSecretExposure(events: EventLog, appId: string): Promise<SecretExposure | null> {
  const exposed = await events.lastChange(appId, 'app.secret_exposed');
  if (exposed === undefined) return null;
  const rotated = await events.lastChange(appId, 'app.secret_rotated');
  const { origin, secret } = exposed.details;
  return {
    lastExposedAt: new Date(exposed.at).toISOString(),
    origin: typeof origin === 'string' ? origin : null,
    clientAddress: exposed.clientAddress,
    secret: typeof secret === 'string' ? secret : null,
    rotatedAt: rotated !== undefined && rotated.id > exposed.id ? new Date(rotated.at).toISOString() : null,
  };
}
