import type { AuditEvent } from '../events/event.js';
import type { EventLog } from '../events/log.js';
import type { AppRecord } from 'tessera-tokens/internal/apps/app.js';

/**
 * The last time one of the app's ClientSecrets was sent from a browser (`app.secret_exposed`): the
 * app's own, or a credential's. As the portal, the list of apps and `tessera apps show` show it.
 */
export interface SecretExposure {
  /** ISO 8601. */
  lastExposedAt: string;
  /** The page's origin, or null when it was opaque or malformed. */
  origin: string | null;
  clientAddress: string | null;
  /** Which of the client's secrets was sent (`current`, `previous`). */
  secret: string | null;
  /** The credential whose secret it was; null: the app's own ClientSecret. */
  credential: { clientId: string; name: string } | null;
  /**
   * When the exposed secret was replaced since (the app's or the credential's first rotation after
   * the exposure) or its credential revoked (ISO 8601); null while neither happened: then rotate it.
   */
  rotatedAt: string | null;
  /** Whether the credential was revoked (rather than rotated); false for the app's own secret. */
  revoked: boolean;
  /**
   * Until when the exposed secret still works after that rotation, which gave it a grace period
   * (ISO 8601); null when it works no longer. While it is set, the secret is still leaked.
   */
  worksUntil: string | null;
}

/** Whether the exposed secret may still be used: never rotated (or revoked) since, or rotated with a grace period still running. */
export function stillLeaked(exposure: SecretExposure): boolean {
  return exposure.rotatedAt === null || exposure.worksUntil !== null;
}

/** How far back the log is read for an app's exposures and rotations: more than an app has credentials. */
const RECENT_CHANGES = 100;

/**
 * The newest exposure of each of the app's clients (its own ClientID, each credential) still in
 * its audit log, newest first, with what became of the exposed secret. Events are kept for
 * `EVENTS_RETENTION_DAYS`, so an older exposure is not shown. Each client is judged by its own
 * rotations: a credential's exposure is never answered by rotating the app's secret, nor the app's
 * by rotating a credential.
 */
export async function secretExposures(events: EventLog, app: AppRecord, now: number): Promise<SecretExposure[]> {
  const exposed = await events.lastChanges(app.appId, 'app.secret_exposed', RECENT_CHANGES);
  if (exposed.length === 0) return [];
  const newestPerClient = new Map<string | null, AuditEvent>();
  for (const event of exposed) {
    const clientId = typeof event.details.clientId === 'string' ? event.details.clientId : null;
    if (!newestPerClient.has(clientId)) newestPerClient.set(clientId, event);
  }
  // A credential's rotations and revocations are read only when one of its secrets was exposed.
  const credentialExposed = [...newestPerClient.keys()].some((clientId) => clientId !== null);
  const credentialChanges = (type: 'credential.rotated' | 'credential.revoked') =>
    credentialExposed ? events.lastChanges(app.appId, type, RECENT_CHANGES) : Promise.resolve([]);
  const [appRotations, credentialRotations, credentialRevocations] = await Promise.all([
    events.lastChanges(app.appId, 'app.secret_rotated', RECENT_CHANGES),
    credentialChanges('credential.rotated'),
    credentialChanges('credential.revoked'),
  ]);
  const ofClient = (list: readonly AuditEvent[], clientId: string) => list.filter((event) => event.details.clientId === clientId);
  return [...newestPerClient].map(([clientId, event]) => {
    const { origin, secret } = event.details;
    const exposure = {
      lastExposedAt: iso(event.at),
      origin: typeof origin === 'string' ? origin : null,
      clientAddress: event.clientAddress,
      secret: typeof secret === 'string' ? secret : null,
    };
    if (clientId === null) {
      return { ...exposure, credential: null, revoked: false, ...fateOf(event, appRotations, app.previousSecret, now) };
    }
    const credential = app.credentials.find((candidate) => candidate.clientId === clientId);
    const revocation = ofClient(credentialRevocations, clientId)[0];
    const name = credential?.name ?? (typeof revocation?.details.name === 'string' ? revocation.details.name : clientId);
    if (credential === undefined) {
      // Revoked: its secrets work no longer, whenever that was (the log may no longer say).
      return { ...exposure, credential: { clientId, name }, revoked: true, rotatedAt: iso(revocation?.at ?? event.at), worksUntil: null };
    }
    const fate = fateOf(event, ofClient(credentialRotations, clientId), credential.previousSecret, now);
    return { ...exposure, credential: { clientId, name }, revoked: false, ...fate };
  });
}

/**
 * What became of a client's secret exposed by `exposure`, from its rotations (newest first): the
 * first rotation after it, and whether the exposed secret still works as the previous one. One
 * rotation with a grace period keeps it until `previousSecret` ends; a second rotation ends it.
 */
function fateOf(
  exposure: AuditEvent,
  rotations: readonly AuditEvent[],
  previousSecret: { validUntil: number } | null,
  now: number,
): Pick<SecretExposure, 'rotatedAt' | 'worksUntil'> {
  const after = rotations.filter((rotation) => rotation.id > exposure.id);
  const first = after.at(-1);
  if (first === undefined) return { rotatedAt: null, worksUntil: null };
  const inGrace =
    after.length === 1 && exposure.details.secret !== 'previous' && previousSecret !== null && previousSecret.validUntil > now;
  return { rotatedAt: iso(first.at), worksUntil: inGrace ? iso(previousSecret.validUntil) : null };
}

function iso(instant: number): string {
  return new Date(instant).toISOString();
}
