import { randomBytes } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { TesseraError } from '../errors.js';
import { formField } from './plugin.js';

/**
 * Forms whose answer shows a secret once (a new app, a rotated ClientSecret) cannot redirect after
 * they are sent, and a browser that reloads that answer sends the form again: a second app, or a
 * second rotation that ends the first one's grace period. Such a form carries a random `once` value,
 * and the browser a cookie named after it; sending the form uses the cookie up, so the same form
 * sent again is refused. Nothing is kept on the server: every instance can check it, and a form
 * never sent leaves only a cookie that expires within the hour.
 */
const COOKIE_PREFIX = 'tessera-once-';
const FIELD = 'once';
const LIFETIME_SECONDS = 3600;
const VALUE = /^[A-Za-z0-9_-]{22}$/;

export interface OnceOptions {
  secure: boolean;
}

/** A new value for a form's hidden `once` field; the answer carries its cookie. */
export function issueOnce(reply: FastifyReply, { secure }: OnceOptions): string {
  const value = randomBytes(16).toString('base64url');
  reply.setCookie(cookieName(value, secure), '1', { ...cookieOptions(secure), maxAge: LIFETIME_SECONDS });
  return value;
}

/** Uses up the form's `once` value, or throws `CONFLICT` when this form was sent already (or is over an hour old). */
export function useOnce(request: FastifyRequest, reply: FastifyReply, { secure }: OnceOptions): void {
  const value = formField(request, FIELD);
  if (value === undefined || !VALUE.test(value) || request.cookies[cookieName(value, secure)] === undefined) {
    throw new TesseraError(
      'CONFLICT',
      'This form was sent already (a reload of the page that answered it sends it again), or it was opened over an hour ago. ' +
        'Nothing was done this time: go back to the app, and open the form again if you still need it.',
    );
  }
  reply.clearCookie(cookieName(value, secure), cookieOptions(secure));
}

function cookieName(value: string, secure: boolean): string {
  return `${secure ? '__Host-' : ''}${COOKIE_PREFIX}${value}`;
}

function cookieOptions(secure: boolean) {
  return { httpOnly: true, secure, sameSite: 'strict', path: secure ? '/' : '/portal' } as const;
}
