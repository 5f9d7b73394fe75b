import type { FastifyInstance, FastifyReply, FastifyRequest, preValidationHookHandler } from 'fastify';
import type { CurrentSession, StartedSession } from '../developers/sessions.js';
import type { PortalCookies } from './cookies.js';
import type { RequestContext } from '../request-context.js';
import type { Html } from './html.js';
import type { PageFrame, SignedInFrame } from './layout.js';

export function sendPage(reply: FastifyReply, page: Html, status = 200): FastifyReply {
  return reply.status(status).type('text/html; charset=utf-8').send(page.text);
}

/** The browser's cookies for a session just started: the session, and a new device token. */
export function setSessionCookies(reply: FastifyReply, cookies: PortalCookies, started: StartedSession): void {
  reply.setCookie(cookies.session.name, started.token, cookies.session.options);
  if (started.deviceToken !== null) reply.setCookie(cookies.device.name, started.deviceToken, cookies.device.options);
}

/** After a form that changed something: the browser shows the page at `location` (POST/redirect/GET). */
export function seeOther(reply: FastifyReply, location: string): FastifyReply {
  return reply.status(303).header('location', location).send();
}

/**
 * A `preHandler` for the pages of signed-in developers: without a working session, a `GET` goes to
 * the sign-in page, which comes back here afterwards; anything else is sent there too (the form
 * that was posted is not repeated).
 */
export async function requireSession(request: FastifyRequest, reply: FastifyReply): Promise<void> {
  if (request.portalSession !== null) return;
  const next = request.method === 'GET' ? `?next=${encodeURIComponent(request.url)}` : '';
  await seeOther(reply, `/portal/sign-in${next}`);
}

/**
 * The `preValidation` hook of the portal's forms: `@fastify/csrf-protection`'s check of the `_csrf`
 * field, which the plugin adds to the instance as a method, bound to it.
 */
export function csrfCheck(app: FastifyInstance): preValidationHookHandler {
  return app.csrfProtection.bind(app);
}

/** The session of a page behind `requireSession`. */
export function sessionOf(request: FastifyRequest): CurrentSession {
  const session = request.portalSession;
  if (session === null) throw new Error('a page behind requireSession ran without a session');
  return session;
}

/** The context of each request's signed-in developer, made once: the services read the role once per context (`AppAccess`). */
const contexts = new WeakMap<FastifyRequest, RequestContext>();

/**
 * What the portal's domain calls carry, so that the events name the developer who acted: the one
 * signed in, or the one whose session is about to start (setting a password, signing up). The
 * signed-in developer's is one object for the whole request, so that the services it is given read
 * the developer's role on an app once for the request (`AppAccess`).
 */
export function asDeveloper(request: FastifyRequest, developer?: { id: string }): RequestContext {
  if (developer !== undefined) return { clientAddress: request.ip, by: { kind: 'developer', developerId: developer.id } };
  let context = contexts.get(request);
  if (context === undefined) {
    context = { clientAddress: request.ip, by: { kind: 'developer', developerId: sessionOf(request).developer.id } };
    contexts.set(request, context);
  }
  return context;
}

/** What a signed-in developer's page is framed with (`PageFrame`): the developer, and a new form token. */
export function signedIn(request: FastifyRequest, reply: FastifyReply): SignedInFrame {
  return { developer: sessionOf(request).developer, csrfToken: reply.generateCsrf(), confirmEmail: request.portalConfirmEmail };
}

/** What a page for a browser not signed in is framed with: a new form token, and no developer. */
export function signedOut(reply: FastifyReply): PageFrame {
  return { csrfToken: reply.generateCsrf() };
}

/** A `next` page: a path under `/portal/` in printable ASCII (no space, no backslash), as long as a URL of the portal may be. */
const NEXT_PAGE = /^\/portal\/[\x21-\x5b\x5d-\x7e]{0,2000}$/;
const SAME_ORIGIN = 'http://portal.invalid';

/**
 * Where to go after signing in: a portal page, never another site, and nothing that cannot be sent
 * as the `Location` header (CR/LF, characters above U+00FF), which would fail the answer after the
 * session was made. A browser's own `next` is percent-encoded ASCII; anything else is `/portal/`.
 * It is checked as the browser resolves it too: `/portal/../` and its percent-encoded forms leave
 * the portal.
 */
export function nextPage(next: string | undefined): string {
  if (next === undefined || !NEXT_PAGE.test(next) || next.startsWith('/portal//')) return '/portal/';
  const resolved = new URL(next, SAME_ORIGIN);
  return resolved.origin === SAME_ORIGIN && resolved.pathname.startsWith('/portal/') ? next : '/portal/';
}
