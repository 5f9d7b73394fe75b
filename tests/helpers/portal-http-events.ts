import assert from 'node:assert/strict';
import { PASSWORD } from './portal.js';

// The portal over plain HTTP, for tests of status codes and answers that need no browser: a
// signed-in developer's requests, with the cookies the portal set (a small cookie jar).

export interface PortalClient {
  /** GET a portal path (or a full URL) with the session's cookies; redirects are not followed. */
  get(path: string): Promise<{ status: number; headers: Headers; text: string }>;
}

/** Signs in through the sign-in form and keeps the cookies. */
export async function signInOverHttp(baseUrl: string, email: string, password = PASSWORD): Promise<PortalClient> {
  const jar = new Map<string, string>();
  const keep = (headers: Headers) => {
    for (const cookie of headers.getSetCookie()) {
      const [pair] = cookie.split(';');
      const at = pair!.indexOf('=');
      jar.set(pair!.slice(0, at), pair!.slice(at + 1));
    }
  };
  const cookieHeader = () => [...jar].map(([name, value]) => `${name}=${value}`).join('; ');
  const form = await fetch(`${baseUrl}/portal/sign-in`);
  keep(form.headers);
  const csrf = /name="_csrf" value="([^"]+)"/.exec(await form.text())?.[1];
  assert.ok(csrf, 'the sign-in form has a form token');
  const signedIn = await fetch(`${baseUrl}/portal/sign-in`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: cookieHeader() },
    body: new URLSearchParams({ _csrf: csrf, email, password }).toString(),
  });
  assert.equal(signedIn.status, 303, await signedIn.text());
  keep(signedIn.headers);
  return {
    async get(path) {
      const response = await fetch(path.startsWith('http') ? path : `${baseUrl}${path}`, { redirect: 'manual', headers: { cookie: cookieHeader() } });
      return { status: response.status, headers: response.headers, text: await response.text() };
    },
  };
}
