import type { Principal, PrincipalKind } from './principal.js';

/** Who caused an event: a token's principal, or the operator (the CLI). Null when unknown (a refused bad token). */
export type Actor = PrincipalKind | 'operator';

/**
 * Where a domain operation comes from and who asks for it: every operation that records an audit
 * event takes one, as `(app, input, context)`.
 */
export interface RequestContext {
  /** The client's address as the server saw it; null for the CLI. */
  clientAddress: string | null;
  /**
   * Who asks: the request's authenticated principal, the operator (the CLI), or nobody yet (a token
   * request, whose credentials the operation itself checks).
   */
  by: Principal | 'operator' | null;
  /** The request's `Origin` header, which browsers send and server-side clients do not; absent for the CLI. */
  origin?: string | undefined;
}

/** The operator's CLI (and the demo app): not asked for over the network. */
export const OPERATOR: RequestContext = Object.freeze({ clientAddress: null, by: 'operator' });

/** A request from `clientAddress` (and, from a browser, its `origin`) that no credentials have been checked for yet. */
export function anonymousRequest(clientAddress: string | null, origin?: string): RequestContext {
  return origin === undefined ? { clientAddress, by: null } : { clientAddress, by: null, origin };
}

export function actorOf(context: RequestContext): Actor | null {
  const { by } = context;
  return by === null || by === 'operator' ? by : by.kind;
}
