import { actorOfEvent, type AuditEvent, type EventType } from '../../../events/event.js';
import type { PrincipalKind } from 'tessera-tokens/internal/principal.js';
import type { Actor } from '../../../request-context.js';
import { utcText } from '../../time.js';

// Events in words, as the events page lists them and an event's own page tells them: what happened,
// who did it (as far as it is known), and each detail as a sentence rather than a key and a value.

/** Each type, as a list of events names it. */
export const TYPE_WORDS: Record<EventType, string> = {
  'token.issued': 'Token issued',
  'token.revoked': 'Token revoked',
  'token.refused': 'Request refused',
  'token.throttled': 'Admin attempt throttled',
  'app.secret_rotated': 'ClientSecret rotated',
  'app.configuration_changed': 'Settings changed',
  'app.secret_exposed': 'ClientSecret sent from a browser',
  'app.refusal_burst': 'Burst of refused requests',
  'app.previous_secret_ended': 'Previous ClientSecret ended',
  'app.owner_changed': 'Owner changed',
  'app.collaborator_invited': 'Collaborator invited',
  'app.collaborator_added': 'Collaborator added',
  'app.collaborator_removed': 'Collaborator removed',
  'app.invitation_withdrawn': 'Invitation withdrawn',
  'credential.created': 'Credential created',
  'credential.rotated': 'Credential\u2019s secret rotated',
  'credential.revoked': 'Credential revoked',
  'credential.previous_secret_ended': 'Credential\u2019s previous secret ended',
  'credential.refused': 'Credential refused',
  'webhook.created': 'Webhook added',
  'webhook.deleted': 'Webhook deleted',
  'webhook.secret_rotated': 'Webhook’s secret rotated',
};

/**
 * The reasons the service records (`details.reason`), as the filter offers them: refusals
 * (`token.refused`, `credential.refused`) are listed; `address` and `app`, of admin attempts
 * throttled, are only counted (the chart), so the list has none of them.
 */
export const LISTED_REASONS: Readonly<Record<string, string>> = {
  invalid_client: 'Wrong ClientID, ClientSecret or AppKey',
  invalid_token: 'Token not valid',
  credential_expired: 'Credential expired',
  address_not_allowed: 'Address not allowed by the credential',
};

/** What happened, in words: the type, said more exactly where the principal, or what was attempted, tells more. */
export function eventTitle(event: AuditEvent): string {
  if (event.type === 'token.issued') return event.principal === 'anonymous' ? 'Anonymous token issued' : 'Admin token issued';
  if (event.type === 'token.refused') {
    if (event.details.reason === 'invalid_token') return 'Token refused';
    const { attempted } = actorOfEvent(event.type, event.principal);
    if (attempted === 'admin') return 'Admin token request refused';
    if (attempted === 'anonymous') return 'Anonymous token request refused';
  }
  if (event.type === 'app.owner_changed' && event.details.created === true) return 'App created';
  if (event.type === 'token.revoked') {
    const { kind, scope } = event.details;
    if (scope === 'app') {
      if (kind === 'admin') return 'Admin tokens revoked';
      if (kind === 'anonymous') return 'Anonymous tokens revoked';
      if (kind === 'all') return 'All tokens revoked';
    }
    if (kind === 'admin') return 'Admin token revoked';
    if (kind === 'anonymous') return 'Anonymous token revoked';
  }
  return TYPE_WORDS[event.type];
}

const ACTORS: Record<Actor, string> = {
  admin: 'the admin (ClientSecret or admin token)',
  anonymous: 'an anonymous user',
  operator: 'the operator (command line)',
  developer: 'a developer in the portal',
};

/** Who did it; for a refused request, nobody known (the title says what it asked for, the address where from). */
export function whoOf(event: AuditEvent, emails: Map<string, string>): string {
  const { principal } = actorOfEvent(event.type, event.principal);
  const credential = credentialNamed(event);
  // Only a holder of the credential's secret gets its right secret refused: not "someone without valid credentials".
  if (event.type === 'credential.refused') return `someone with the ClientSecret of ${credential ?? 'a credential'}`;
  if (principal === null) return 'someone without valid credentials';
  // An admin token or a request of a credential's: that credential, not "the admin".
  if (principal === 'admin' && credential !== null && (event.type === 'token.issued' || event.type === 'app.secret_exposed'))
    return `the credential ${credential}`;
  if (principal === 'admin' && typeof event.details.byClientId === 'string')
    return `an admin token of the credential ${event.details.byClientId}`;
  if (principal === 'developer' && typeof event.details.byDeveloperId === 'string') {
    return emails.get(event.details.byDeveloperId) ?? `Developer ${event.details.byDeveloperId}`;
  }
  return ACTORS[principal] ?? principal;
}

/** The credential an event names (its name and ClientID), or null. */
function credentialNamed(event: AuditEvent): string | null {
  const { clientId, name } = event.details;
  if (typeof clientId !== 'string') return null;
  return typeof name === 'string' ? `\u201c${shorten(name)}\u201d (${clientId})` : clientId;
}

/** What a refused request asked for, in words; null for an event that is no refusal, or a bad token (it asked for nothing). */
export function attemptedWords(event: AuditEvent): string | null {
  const { attempted } = actorOfEvent(event.type, event.principal);
  if (attempted === 'admin') return 'an admin token, with a ClientID and a ClientSecret';
  if (attempted === 'anonymous') return 'an anonymous token, with the AppID and an AppKey';
  return null;
}

/** A reason in a few words, of what the event asked for: `Wrong ClientID or ClientSecret`; the code itself when it is none the portal knows. */
export function reasonLabel(event: AuditEvent, reason: string): string {
  if (event.type === 'token.refused' && reason === 'invalid_client') {
    const words = wrongCredentials(actorOfEvent(event.type, event.principal).attempted);
    return `${words[0]!.toUpperCase()}${words.slice(1)}`;
  }
  if (event.type === 'token.throttled')
    return reason === 'address' ? 'Too many wrong secrets from the address' : 'Too many wrong secrets for the app';
  return LISTED_REASONS[reason] ?? reason;
}

/**
 * Why the service refused, in a few sentences: what the reason means and what it usually is. Null
 * when the event has no reason, or one this portal does not know (it is then shown as it is).
 */
export function reasonExplained(event: AuditEvent): string | null {
  const reason = event.details.reason;
  switch (reason) {
    case 'invalid_client':
      if (actorOfEvent(event.type, event.principal).attempted === 'anonymous') {
        return 'The AppKey sent is not the app\u2019s, and the app requires its AppKey for anonymous tokens. A client with an old AppKey, or someone guessing.';
      }
      return 'The ClientID and ClientSecret sent do not match: not the app\u2019s ClientSecret (nor the previous one during the grace period of a rotation), nor the secret of one of its credentials. Now and then, a mistyped or an old secret; many in a short time, from one address or many, someone guessing.';
    case 'invalid_token':
      return 'The bearer token sent is not one this app accepts: malformed, expired, revoked, or never issued for it. Often a client still holding an old token; many from one address can be someone trying tokens.';
    case 'credential_expired':
      return 'The credential\u2019s ClientSecret was right, but the credential has expired, so it gets no token any more. Whatever still uses it needs a new credential.';
    case 'address_not_allowed':
      return 'The credential\u2019s ClientSecret was right, but the request came from an address the credential does not allow. Either the service using it moved, or someone else has its secret: check the credential\u2019s addresses, and revoke it if in doubt.';
    case 'address':
      return 'Too many wrong ClientSecrets from this address within a minute: every admin attempt from it is refused (429) for the rest of the minute, the right secret too.';
    case 'app':
      return 'Too many wrong ClientSecrets for this app within a minute, from any address: every admin attempt is refused (429) for the rest of the minute, the right secret too.';
    default:
      return null;
  }
}

/** How many items of a list, and characters of a value, an event shows: a long list of origins is summarised. */
const MAX_LISTED = 5;
const MAX_SHOWN_LENGTH = 120;

/**
 * The event's details in words, one sentence each: a revocation as what it did, a refusal as what
 * was wrong. `withReason: false` leaves the reason out, for a page that explains it apart.
 */
export function detailsOf(event: AuditEvent, emails: Map<string, string>, { withReason = true } = {}): string[] {
  const revocation = event.type === 'token.revoked' ? revocationText(event) : null;
  const shown: string[] = revocation === null ? [] : [revocation];
  for (const [key, value] of Object.entries(event.details)) {
    if (key === 'byDeveloperId' || (key === 'reason' && !withReason)) continue;
    // An app's creation (`eventTitle`): its owner, not "previous owner: none".
    if (event.details.created === true && (key === 'created' || key === 'previousOwnerId')) continue;
    if (key === 'reason' && event.type === 'token.refused' && value === 'invalid_token') {
      shown.push('invalid, expired or revoked token');
      continue;
    }
    if (revocation !== null && REVOCATION_KEYS.has(key)) continue;
    if (key === 'reason' && event.type === 'token.refused' && value === 'invalid_client') {
      shown.push(wrongCredentials(actorOfEvent(event.type, event.principal).attempted));
      continue;
    }
    shown.push(detailOf(key, value, emails));
  }
  return shown;
}

/** What a refused token request got wrong: of what it asked for, never the other kind's key. */
function wrongCredentials(attempted: PrincipalKind | null): string {
  if (attempted === 'admin') return 'wrong ClientID or ClientSecret';
  if (attempted === 'anonymous') return 'wrong AppKey';
  return 'wrong ClientID, ClientSecret or AppKey';
}

/** The details a revocation's event says in one sentence (`revocationText`). */
const REVOCATION_KEYS: ReadonlySet<string> = new Set(['kind', 'scope', 'count', 'anonymousCutoff']);

/**
 * A revocation as what it did. One token (`scope: token`): "Revoked one admin token". A revoke-all
 * (`scope: app`): its `count` is of stored tokens, so it is said of admin tokens only; anonymous
 * tokens are not stored (a count of 0) but all ended by the cut-off, which events name since it was
 * added to them (before, it was the event's own time). Null for details of another shape.
 */
export function revocationText(event: AuditEvent): string | null {
  const { kind, scope, count, anonymousCutoff } = event.details;
  if (scope === 'token') {
    if (kind === 'admin') return 'Revoked one admin token';
    if (kind === 'anonymous') return 'Revoked one anonymous token';
    return null;
  }
  if (scope !== 'app') return null;
  const cutoff = typeof anonymousCutoff === 'number' ? `up to ${instantText(anonymousCutoff)}` : 'until then';
  const adminCount = typeof count === 'number' ? String(count) : 'all';
  if (kind === 'admin') return `Revoked every admin token of the app: ${adminCount}`;
  if (kind === 'anonymous') return `Revoked every anonymous token of the app issued ${cutoff}`;
  const adminTokens = count === 1 ? '1 admin token' : `${adminCount} admin tokens`;
  if (kind === 'all') return `Revoked every token of the app: ${adminTokens}, and every anonymous token issued ${cutoff}`;
  return null;
}

function detailOf(key: string, value: AuditEvent['details'][string], emails: Map<string, string>): string {
  switch (key) {
    case 'expiresAt':
      return typeof value === 'number' ? `expires ${instantText(value)}` : 'never expires';
    case 'previousSecretValidUntil':
      return typeof value === 'number'
        ? `previous ClientSecret works until ${instantText(value)}`
        : 'previous ClientSecret stopped at once';
    case 'secret':
      return `with the ${shorten(String(value))} secret`;
    case 'reason':
      if (value === 'credential_expired') return 'the credential has expired';
      if (value === 'address_not_allowed') return 'from an address the credential does not allow';
      if (value === 'address') return 'too many wrong secrets from this address';
      if (value === 'app') return 'too many wrong secrets for the app';
      return `reason: ${shorten(String(value))}`;
    case 'origin':
      return value === null ? 'from a page of an unknown origin' : `from the page at ${shorten(String(value))}`;
    case 'scope':
      return value === 'app'
        ? "all of the app's tokens of that kind"
        : value === 'token'
          ? 'one token'
          : `scope: ${shorten(String(value))}`;
    case 'adminTokensRevoked':
      return value === 0 ? 'admin tokens kept' : `revoked every admin token of the app: ${String(value)}`;
    case 'tokensRevoked':
      return value === 0 ? 'it had no token to revoke' : `revoked the admin tokens it got: ${String(value)}`;
  }
  const name = words(key);
  // `ownerId` → `owner: ada@example.com` (or `none`): the person, not the id.
  if (key.endsWith('Id') && typeof value === 'string' && emails.has(value)) return `${words(key.slice(0, -2))}: ${emails.get(value)}`;
  if (key.endsWith('Id') && value === null) return `${words(key.slice(0, -2))}: none`;
  if (Array.isArray(value)) {
    const listed = value.slice(0, MAX_LISTED).map(shorten).join(', ');
    return `${name}: ${value.length === 0 ? 'none' : listed}${value.length > MAX_LISTED ? ` and ${value.length - MAX_LISTED} more` : ''}`;
  }
  if (typeof value === 'boolean') return `${name}: ${value ? 'yes' : 'no'}`;
  if (typeof value === 'number' && /(At|Until)$/.test(key)) return `${name}: ${instantText(value)}`;
  return `${name}: ${value === null ? 'none' : shorten(String(value))}`;
}

/** An instant in UNIX ms as people read it; a number that is no date as it is. */
function instantText(ms: number): string {
  return Number.isFinite(new Date(ms).getTime()) ? utcText(ms, 'second') : String(ms);
}

/** `adminTokenMaxLifetimeSeconds` → `admin token max lifetime seconds`. */
function words(key: string): string {
  return shorten(key.replace(/([a-z0-9])([A-Z])/g, '$1 $2').toLowerCase());
}

function shorten(text: string): string {
  return text.length > MAX_SHOWN_LENGTH ? `${text.slice(0, MAX_SHOWN_LENGTH)}…` : text;
}
