import assert from 'node:assert/strict';
import { PASSWORD } from './portal.js';
import type { TestServer } from './server.js';

// The portal over plain HTTP, as a browser without JavaScript speaks it: a cookie jar filled from
// Set-Cookie, pages fetched for their form token (`_csrf`), forms posted url-encoded. For tests that
// check what the server does with any request (CSRF, another developer's forms), on both stores.

export interface PortalResponse {
  status: number;
  headers: Headers;
  text: string;
  /** Where a 303 sends the browser, if it does. */
  location: string | null;
}

export interface PortalPage extends PortalResponse {
  /** The value of the page's first `_csrf` field (every form of a page carries the same one). */
  csrf: string;
  /** The page's `once` field, on forms that may be sent once only (src/portal/single-use-forms.ts). */
  once: string | undefined;
}

export interface PortalClient {
  /** A request to a path of the server (`/portal/…`) with this client's cookies; redirects are not followed. */
  send(path: string, init?: RequestInit): Promise<PortalResponse>;
  /** GET a path, whatever the answer. */
  get(path: string): Promise<PortalResponse>;
  /** GET a page, which must be 200 and have a form token. */
  page(path: string): Promise<PortalPage>;
  /** POST a form, `fields` as typed; add `_csrf` yourself (or leave it out, to see it refused). */
  post(path: string, fields: Record<string, string>): Promise<PortalResponse>;
  /** The cookies it holds, by name. */
  readonly cookies: Map<string, string>;
}

/** The first `_csrf` field of a page. */
export function csrfFieldOf(text: string): string {
  const match = /<input type="hidden" name="_csrf" value="([^"]+)">/.exec(text);
  assert.ok(match !== null, 'the page has a form token');
  return match[1]!;
}

/** Where the portal is: a `TestServer`, or a server process of the tests' own. */
type PortalServer = Pick<TestServer, 'baseUrl'>;

/** A client with its own cookie jar, signed in to the portal through the sign-in form. */
export async function signInOverHttp(server: PortalServer, email: string, password = PASSWORD): Promise<PortalClient> {
  const client = portalClient(server);
  const signInPage = await client.page('/portal/sign-in');
  const signedIn = await client.post('/portal/sign-in', { _csrf: signInPage.csrf, email, password });
  assert.equal(signedIn.status, 303, `sign-in of ${email}: ${signedIn.status} ${signedIn.text.slice(0, 300)}`);
  return client;
}

/** A client with an empty cookie jar (not signed in). */
export function portalClient(server: PortalServer): PortalClient {
  const cookies = new Map<string, string>();
  const send = async (path: string, init: RequestInit = {}): Promise<PortalResponse> => {
    const headers = new Headers(init.headers);
    if (cookies.size > 0) headers.set('cookie', [...cookies].map(([name, value]) => `${name}=${value}`).join('; '));
    const response = await fetch(`${server.baseUrl}${path}`, { ...init, headers, redirect: 'manual' });
    for (const line of response.headers.getSetCookie()) {
      const [pair = ''] = line.split(';');
      const equals = pair.indexOf('=');
      const name = pair.slice(0, equals).trim();
      const value = pair.slice(equals + 1).trim();
      // An expired cookie (sign-out) is one the browser drops.
      if (value === '' || /;\s*expires=Thu, 01 Jan 1970/i.test(line) || /;\s*max-age=0/i.test(line)) cookies.delete(name);
      else cookies.set(name, value);
    }
    return { status: response.status, headers: response.headers, text: await response.text(), location: response.headers.get('location') };
  };
  return {
    cookies,
    send,
    get: (path) => send(path),
    async page(path) {
      const response = await send(path);
      assert.equal(response.status, 200, `GET ${path}: ${response.status} ${response.text.slice(0, 300)}`);
      return {
        ...response,
        csrf: csrfFieldOf(response.text),
        once: /<input type="hidden" name="once" value="([^"]+)">/.exec(response.text)?.[1],
      };
    },
    post(path, fields) {
      return send(path, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(fields).toString(),
      });
    },
  };
}
