import { randomBytes } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { formSentAlready } from 'tessera-tokens/internal/error-catalogue.js';
import { ONCE_LIFETIME_MS } from '../once-claims.js';
import { formField } from './context.js';

/**
 * Forms whose answer shows a secret once (a new app, a rotated ClientSecret) cannot redirect after
 * they are sent, and a browser that reloads that answer sends the form again: a second app, or a
 * second rotation that ends the first one's grace period. Such a form carries a random `once` value,
 * and the browser a cookie named after it, which expires within the hour: a form is accepted only
 * from the browser it was given to, and only while it is fresh. The value itself is single-use on
 * the server: the change claims it in its own transaction (`src/once-claims.ts`), so that two sends of the
 * same form in flight together (a resend while the first is pending, a retrying proxy) take effect
 * once, on every instance. The answer clears the cookie as well.
 */
const COOKIE_PREFIX = 'tessera-once-';
const FIELD = 'once';
const LIFETIME_SECONDS = ONCE_LIFETIME_MS / 1000;
const VALUE = /^[A-Za-z0-9_-]{22}$/;

export interface SingleUseFormOptions {
  secure: boolean;
}

/** A new value for a form's hidden `once` field; the answer carries its cookie. */
export function issueSingleUseFormValue(reply: FastifyReply, { secure }: SingleUseFormOptions): string {
  const value = randomBytes(16).toString('base64url');
  reply.setCookie(cookieName(value, secure), '1', { ...cookieOptions(secure), maxAge: LIFETIME_SECONDS });
  return value;
}

/**
 * The form's `once` value, for the change to claim (`src/once-claims.ts`), its cookie cleared; throws
 * `CONFLICT` when this browser was not given the form within the hour, or sent it already.
 */
export function useSingleUseFormValue(request: FastifyRequest, reply: FastifyReply, { secure }: SingleUseFormOptions): string {
  const value = formField(request, FIELD);
  if (value === undefined || !VALUE.test(value) || request.cookies[cookieName(value, secure)] === undefined) throw formSentAlready();
  reply.clearCookie(cookieName(value, secure), cookieOptions(secure));
  return value;
}

function cookieName(value: string, secure: boolean): string {
  return `${secure ? '__Host-' : ''}${COOKIE_PREFIX}${value}`;
}

function cookieOptions(secure: boolean) {
  return { httpOnly: true, secure, sameSite: 'strict', path: secure ? '/' : '/portal' } as const;
}
