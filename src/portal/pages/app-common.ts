import type { FastifyRequest } from 'fastify';
import { isTesseraError } from '../../errors.js';
import type { RequestContext } from '../../request-context.js';
import { html, type Html } from '../html.js';
import { sessionOf } from '../respond.js';

/** The route parameters of an app's pages. */
export type AppParams = { Params: { appId: string } };

/** What the portal's domain calls carry, so that the events name the developer who acted. */
export function asDeveloper(request: FastifyRequest): RequestContext {
  return { clientAddress: request.ip, by: { kind: 'developer', developerId: sessionOf(request).developer.id } };
}

/** The message of a mistake in what was typed (a 400 of the domain), for the form; anything else is thrown on. */
export function mistakeIn(error: unknown): string {
  if (isTesseraError(error) && error.status === 400) return error.message;
  throw error;
}

/** An instant (ISO 8601) as people read it, to the minute, in UTC; the exact one in `datetime`. */
export function utcTime(iso: string): Html {
  return html`<time datetime="${iso}">${iso.slice(0, 16).replace('T', ' ')} UTC</time>`;
}

/** A lifetime in the largest unit it is a whole number of. */
export function lifetime(seconds: number | null): string {
  if (seconds === null) return 'no limit';
  for (const [unit, size] of LIFETIME_UNITS) {
    if (seconds % size === 0) return `${seconds / size} ${unit}${seconds === size ? '' : 's'}`;
  }
  return `${seconds} seconds`;
}

/** The units a lifetime is shown and typed in, the largest first. */
export const LIFETIME_UNITS = [
  ['day', 86_400],
  ['hour', 3_600],
  ['minute', 60],
  ['second', 1],
] as const;
