import assert from 'node:assert/strict';
import { DEFAULT_SIGN_IN_LIMITS } from '../../src/developers/sign-in-limits.js';
import { buildServer } from '../../src/server.js';
import { createTessera, type Tessera } from '../../src/tessera.js';
import { listenLocally, NO_LIMITS } from './server.js';
import { createTestStore } from './store.js';

// The portal spoken to over plain HTTP, as a browser without JavaScript would: a cookie jar, forms
// posted with the page's form token, redirects not followed (the tests look at them).

export interface PortalResponse {
  status: number;
  headers: Headers;
  text: string;
  /** `Location`, as a path, for a redirect. */
  location: string | undefined;
}

export class PortalBrowser {
  readonly cookies = new Map<string, string>();
  /** The form token of the last page read, for the next form. */
  csrf: string | undefined;

  constructor(readonly baseUrl: string) {}

  async get(path: string): Promise<PortalResponse> {
    return this.#send(path, { method: 'GET' });
  }

  /** Posts a form, with the last page's form token unless `_csrf` is given (null: none at all). */
  async post(path: string, fields: Record<string, string>, { csrf }: { csrf?: string | null } = {}): Promise<PortalResponse> {
    const token = csrf === undefined ? this.csrf : csrf;
    const body = new URLSearchParams(fields);
    if (token !== null && token !== undefined) body.set('_csrf', token);
    return this.#send(path, { method: 'POST', body: body.toString(), headers: { 'content-type': 'application/x-www-form-urlencoded' } });
  }

  async #send(path: string, init: RequestInit): Promise<PortalResponse> {
    const headers = new Headers(init.headers);
    if (this.cookies.size > 0) headers.set('cookie', [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; '));
    const response = await fetch(`${this.baseUrl}${path}`, { ...init, headers, redirect: 'manual' });
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const index = pair!.indexOf('=');
      const name = pair!.slice(0, index).trim();
      const value = pair!.slice(index + 1).trim();
      if (value === '' || /;\s*expires=Thu, 01 Jan 1970/i.test(line)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    const text = await response.text();
    const csrf = /name="_csrf" value="([^"]+)"/.exec(text)?.[1];
    if (csrf !== undefined) this.csrf = csrf;
    const location = response.headers.get('location') ?? undefined;
    return { status: response.status, headers: response.headers, text, location };
  }
}

/** A browser signed in as this developer (through the sign-in form). */
export async function signedInBrowser(baseUrl: string, email: string, password: string): Promise<PortalBrowser> {
  const browser = new PortalBrowser(baseUrl);
  await browser.get('/portal/sign-in');
  const signedIn = await browser.post('/portal/sign-in', { email, password });
  assert.equal(signedIn.status, 303, signedIn.text);
  return browser;
}

export interface SignUpServer {
  baseUrl: string;
  tessera: Tessera;
  close(): Promise<void>;
}

/**
 * A server like `startServer`'s whose portal has `PORTAL_SIGNUP=open`; with `failuresPerAddress`,
 * rate limits are on and that is the sign-in (and sign-up) limit of one client address.
 */
export async function startSignUpServer({ failuresPerAddress }: { failuresPerAddress?: number } = {}): Promise<SignUpServer> {
  const testStore = await createTestStore();
  const tessera = createTessera({
    store: testStore.store,
    rateLimits: failuresPerAddress === undefined ? NO_LIMITS : { ...NO_LIMITS, enabled: true, tokenRequestsPerAddressPerMinute: 1000 },
    signInLimits: { ...DEFAULT_SIGN_IN_LIMITS, failuresPerAddress: { points: failuresPerAddress ?? 100, duration: 3600 } },
  });
  const server = buildServer({ tessera, portalSignup: 'open' });
  const baseUrl = await listenLocally(server);
  return {
    baseUrl,
    tessera,
    async close() {
      await server.close();
      await tessera.events.flush();
      await tessera.limits.close();
      await testStore.dispose();
    },
  };
}
