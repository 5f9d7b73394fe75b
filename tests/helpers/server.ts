import type { FastifyInstance } from 'fastify';
import type { CreatedApp } from '../../src/apps/service.js';
import type { AdminPathRule } from '../../src/auth/forward.js';
import type { Clock } from '../../src/clock.js';
import { buildServer } from '../../src/server.js';
import type { HttpTimeouts } from '../../src/http/timeouts.js';
import type { RateLimitSettings } from '../../src/limits/rate-limits.js';
import { createTessera, type Tessera } from '../../src/tessera.js';
import { createTestStore, type TestStore } from './store.js';

export const NO_LIMITS: RateLimitSettings = {
  enabled: false,
  tokenRequestsPerAddressPerMinute: 1,
  adminFailuresPerAddressPerMinute: 1,
  adminFailuresPerAppPerMinute: 1,
};

export interface TestServer {
  /** e.g. http://127.0.0.1:40123 */
  baseUrl: string;
  tessera: Tessera;
  testStore: TestStore;
  /** An app created for the test, with its four keys. */
  app: CreatedApp;
  /** `${baseUrl}/api/apps/${app.appId}` */
  appUrl: string;
  close(): Promise<void>;
}

/** A real server listening on 127.0.0.1 on a free port, over a fresh store. Rate limits are off unless given. */
export interface TestServerOptions {
  clock?: Clock;
  rateLimits?: RateLimitSettings;
  forwardAuthAdminPaths?: readonly AdminPathRule[];
  trustedProxies?: readonly string[];
  timeouts?: HttpTimeouts;
  /** A store of the caller's, which it disposes of; by default a fresh one, disposed of by `close`. */
  testStore?: TestStore;
}

/** Listens on 127.0.0.1, on a port the kernel picks; returns the base URL. */
export async function listenLocally(server: FastifyInstance): Promise<string> {
  await server.listen({ host: '127.0.0.1', port: 0 });
  const address = server.server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return `http://127.0.0.1:${address.port}`;
}

export async function startServer(options: TestServerOptions = {}): Promise<TestServer> {
  const testStore = options.testStore ?? (await createTestStore());
  const tessera = createTessera({
    store: testStore.store,
    rateLimits: options.rateLimits ?? NO_LIMITS,
    ...(options.clock === undefined ? {} : { clock: options.clock }),
  });
  const app = await tessera.apps.create('Test app');
  const server = buildServer({
    tessera,
    forwardAuthAdminPaths: options.forwardAuthAdminPaths ?? [],
    trustedProxies: options.trustedProxies ?? [],
    ...(options.timeouts === undefined ? {} : { timeouts: options.timeouts }),
  });
  const baseUrl = await listenLocally(server);
  return {
    baseUrl,
    tessera,
    testStore,
    app,
    appUrl: `${baseUrl}/api/apps/${app.appId}`,
    async close() {
      await server.close();
      await tessera.events.flush();
      await tessera.limits.close();
      if (options.testStore === undefined) await testStore.dispose();
    },
  };
}

export function basic(user: string, password = 'anything'): string {
  return `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
}

export function bearer(token: string): string {
  return `Bearer ${token}`;
}

export interface JsonResponse {
  status: number;
  headers: Headers;
  /** Parsed JSON, or undefined when the body is not JSON. */
  body: any;
  text: string;
}

/** The text as JSON, or undefined when it is not JSON. */
export function parseJson(text: string): any {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** fetch, then read the body as text and, where possible, as JSON. */
export async function request(url: string, init: RequestInit = {}): Promise<JsonResponse> {
  const response = await fetch(url, init);
  const text = await response.text();
  const body = parseJson(text);
  return { status: response.status, headers: response.headers, body, text };
}

/** POST a JSON token request to the app's token endpoint with the Basic header of the app. */
export async function requestToken(
  server: TestServer,
  fields: Record<string, unknown>,
  headers: Record<string, string> = {},
): Promise<JsonResponse> {
  return request(`${server.appUrl}/oauth2/token`, {
    method: 'POST',
    headers: { authorization: basic(server.app.appId), 'content-type': 'application/json', ...headers },
    body: JSON.stringify(fields),
  });
}

export function adminFields(server: TestServer, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { grant_type: 'client_credentials', client_id: server.app.clientId, client_secret: server.app.clientSecret, ...extra };
}

export function anonymousFields(server: TestServer, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { grant_type: 'client_credentials', client_id: server.app.appId, client_secret: server.app.appKey, ...extra };
}

/** The contract's error body: `{errorCode, error, error_description, message}`, the same code twice. */
export function errorShapeProblems(response: JsonResponse, code: string, status: number): string[] {
  const problems: string[] = [];
  if (response.status !== status) problems.push(`status ${response.status}, expected ${status}`);
  const body = response.body as Record<string, unknown> | undefined;
  if (body === undefined || typeof body !== 'object' || body === null) return [...problems, `body is not JSON: ${response.text}`];
  if (body.errorCode !== code) problems.push(`errorCode ${String(body.errorCode)}, expected ${code}`);
  if (body.error !== code) problems.push(`error ${String(body.error)}, expected ${code}`);
  if (typeof body.message !== 'string' || body.message === '') problems.push('message missing');
  if (body.error_description !== body.message) problems.push('error_description differs from message');
  if (response.text.includes('%')) problems.push('body contains a % character');
  if (!(response.headers.get('content-type') ?? '').startsWith('application/json')) problems.push('content-type is not JSON');
  return problems;
}
