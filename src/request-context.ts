import { operatorRequired } from 'tessera-tokens/internal/error-catalogue.js';
import type { Principal, PrincipalKind } from 'tessera-tokens/internal/principal.js';

/**
 * Who caused an event: a token's principal, the operator (the CLI), or a developer signed in to the
 * portal (which one: the event's `developerId` detail). Null when unknown (a refused bad token).
 */
export type Actor = PrincipalKind | 'operator' | 'developer';

/** A developer signed in to the portal, acting on an app they are a member of. */
export interface DeveloperIdentity {
  kind: 'developer';
  developerId: string;
}

/**
 * Where a domain operation comes from and who asks for it: every operation that records an audit
 * event takes one, as `(app, input, context)`.
 */
export interface RequestContext {
  /** The client's address as the server saw it; null for the CLI. */
  clientAddress: string | null;
  /**
   * Who asks: the request's authenticated principal, the operator (the CLI), a developer (the
   * portal), or nobody yet (a token request or a sign-in, whose credentials the operation itself checks).
   */
  by: Principal | DeveloperIdentity | 'operator' | null;
  /** The request's `Origin` header, which browsers send and server-side clients do not; absent for the CLI. */
  origin?: string | undefined;
}

/**
 * The operator's CLI (and the demo app): not asked for over the network. The one way to act with
 * the operator's authority: a context that names nobody (`by: null`) has none, nor an owner's.
 */
export const OPERATOR: RequestContext = Object.freeze({ clientAddress: null, by: 'operator' });

/** Throws `FORBIDDEN` unless the operator asks: never for a context that names nobody. */
export function requireOperator(context: RequestContext): void {
  if (context.by !== 'operator') throw operatorRequired();
}

/** A request from `clientAddress` (and, from a browser, its `origin`) that no credentials have been checked for yet. */
export function anonymousRequest(clientAddress: string | null, origin?: string): RequestContext {
  return origin === undefined ? { clientAddress, by: null } : { clientAddress, by: null, origin };
}

export function actorOf(context: RequestContext): Actor | null {
  const { by } = context;
  return by === null || by === 'operator' ? by : by.kind;
}

/** The developer who asks, if a developer does (the portal). */
export function actingDeveloperId(context: RequestContext): string | undefined {
  const { by } = context;
  return by !== null && by !== 'operator' && by.kind === 'developer' ? by.developerId : undefined;
}

/** Which developer acted, for an audit event's details: the event's principal says only "developer". */
export function developerDetails(context: RequestContext): { byDeveloperId?: string } {
  const developerId = actingDeveloperId(context);
  return developerId === undefined ? {} : { byDeveloperId: developerId };
}

/** Which developer, or which credential's admin token, made a change: for its audit event's details. */
export function actingDetails(context: RequestContext): { byClientId?: string; byDeveloperId?: string } {
  const { by } = context;
  if (by !== null && by !== 'operator' && by.kind === 'admin' && by.clientId !== null) return { byClientId: by.clientId };
  return developerDetails(context);
}
