import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { AuthenticationRequest } from 'tessera-tokens/internal/auth/authenticate.js';
import type { RequestAuthenticator } from 'tessera-tokens/internal/auth/authenticate.js';
import type { MaybePromise } from 'tessera-tokens/internal/maybe-promise.js';
import type { Principal } from 'tessera-tokens/internal/principal.js';
import { OPERATOR } from '../../src/request-context.js';
import { assertError, assertInvalidToken, assertUnauthorized } from './assert.js';
import { sleep } from './fleet.js';
import { powAttestation } from './attestation.js';
import {
  adminTokenOf,
  anonymousFields,
  anonymousTokenOf,
  appOn,
  appUrlOf,
  basic,
  bearer,
  request,
  requestAs,
  requestToken,
  revokeToken,
  whoami,
  type JsonResponse,
} from './http.js';
import { rawWithHeaderLines } from './raw-http.js';
import { startServer, type TestServer } from './server.js';
import { createPostgresTestStore, createSqliteTestStore, type TestStore } from './store.js';

// One suite for the middleware that other services of the backend mount (Express, Fastify): a real
// Tessera server and a real service app, each listening on a port, over one real store (a SQLite
// file, then PostgreSQL). The service learns each request's principal through a `TesseraVerifier`
// opened on the store's DATABASE_URL, as a separate service would.

/** What the middleware is given: a `TesseraVerifier`, or anything with its `authenticate`. */
export type Authenticator = RequestAuthenticator;

export interface Verifier extends RequestAuthenticator {
  close(): Promise<void>;
}

export interface ServiceApp {
  /** e.g. http://127.0.0.1:40123 */
  baseUrl: string;
  close(): Promise<void>;
}

/**
 * A framework's side of the suite. `startService` must serve, with `authenticator` mounted on
 * `/api/apps/:appId`:
 * - `GET /api/apps/:appId/principal` and `GET /api/apps/:appId/users/:userId`: 200, the request's principal as JSON;
 * - `GET /api/apps/:appId/admin/report`: admin only; 200 `{"report": "ok", "principal": …}`;
 * - `GET /api/apps/:appId/reports`: the scope `reports:read` only (`requireScope`); 200 `{"reports": [], "principal": …}`;
 * - `GET /healthz`: outside the authenticated routes; 200 `ok` without any header.
 */
export interface MiddlewareUnderTest {
  framework: string;
  openVerifier(databaseUrl: string): Promise<Verifier>;
  startService(authenticator: Authenticator): Promise<ServiceApp>;
}

export const BACKENDS: readonly { name: string; create(): Promise<TestStore> }[] = [
  { name: 'SQLite', create: createSqliteTestStore },
  { name: 'PostgreSQL', create: createPostgresTestStore },
];

/** The contract promises that a revoked token or a deleted app stops working within this. */
const PROPAGATION_LIMIT_MS = 1_000;
const POLL_INTERVAL_MS = 10;

/**
 * Passes every call on to the verifier and remembers whether it was answered from memory (a value)
 * or from the store (a promise), so that a test can make sure a token is cached before it revokes it.
 */
export class ObservedAuthenticator implements Authenticator {
  /** One entry per call, in order: true when answered from memory. */
  readonly fromMemory: boolean[] = [];

  constructor(private readonly verifier: Authenticator) {}

  authenticate(request: AuthenticationRequest): MaybePromise<Principal> {
    const answer = this.verifier.authenticate(request);
    this.fromMemory.push(!(answer instanceof Promise));
    return answer;
  }
}

interface Propagation {
  fromChangeStart: number;
  fromChangeDone: number;
}

/** Propagation times measured by the suite, printed once at the end of each file. */
const timings: string[] = [];

export function describeMiddleware(subject: MiddlewareUnderTest): void {
  for (const backend of BACKENDS) {
    describe(`${subject.framework} middleware over ${backend.name}`, () => {
      let testStore: TestStore;
      let tessera: TestServer;
      let verifier: Verifier;
      let observed: ObservedAuthenticator;
      let service: ServiceApp;
      const serviceUrl = (appId: string, rest: string) => `${service.baseUrl}/api/apps/${appId}${rest}`;

      before(async () => {
        testStore = await backend.create();
        tessera = await startServer({ testStore });
        verifier = await subject.openVerifier(testStore.databaseUrl);
        observed = new ObservedAuthenticator(verifier);
        service = await subject.startService(observed);
      });
      after(async () => {
        await service?.close();
        await verifier?.close();
        await tessera?.close();
        await testStore?.dispose();
      });

      /** Asks the service until the verifier answers from memory: the app (and token) are then cached. */
      async function cachedPrincipal(url: string, authorization: string): Promise<Principal> {
        for (let attempt = 0; attempt < 50; attempt++) {
          const response = await requestAs(url, authorization);
          assert.equal(response.status, 200, response.text);
          if (observed.fromMemory.at(-1) === true) return response.body as Principal;
          await sleep(50);
        }
        throw new Error('the verifier never answered from memory');
      }

      /**
       * Starts `change` (a revocation, a deletion) and asks the service every 10 ms until every answer
       * of `probe` is `refused`; each one before that must be `meanwhile` (by default a 200). Answers
       * the milliseconds from the start of the change, and from Tessera's answer, to the first
       * refusal. Then checks that the refusal lasts (nothing stale is cached again).
       */
      async function timeUntilRefused(
        change: () => Promise<void>,
        probe: () => Promise<JsonResponse[]>,
        refused: (response: JsonResponse) => boolean,
        meanwhile: (response: JsonResponse) => boolean = (response) => response.status === 200,
      ): Promise<Propagation> {
        const started = performance.now();
        await change();
        const changed = performance.now();
        for (;;) {
          const responses = await probe();
          const answered = performance.now();
          if (responses.every(refused)) {
            assert.ok(
              answered - started < PROPAGATION_LIMIT_MS,
              `refused only ${Math.round(answered - started)} ms after the change began`,
            );
            for (let again = 0; again < 5; again++) {
              await sleep(POLL_INTERVAL_MS * 3);
              for (const later of await probe())
                assert.ok(refused(later), `accepted again after it was refused: ${later.status} ${later.text}`);
            }
            return { fromChangeStart: Math.round(answered - started), fromChangeDone: Math.round(answered - changed) };
          }
          for (const response of responses) {
            assert.ok(refused(response) || meanwhile(response), `unexpected answer: ${response.status} ${response.text}`);
          }
          assert.ok(
            answered - started < PROPAGATION_LIMIT_MS,
            `still accepted ${Math.round(answered - started)} ms after the change began`,
          );
          await sleep(POLL_INTERVAL_MS);
        }
      }

      function record(what: string, measured: Propagation): void {
        timings.push(
          `${subject.framework} over ${backend.name}: ${what}: refused ${measured.fromChangeStart} ms after the change began ` +
            `(${measured.fromChangeDone} ms after Tessera answered)`,
        );
      }

      /** The service answers exactly what Tessera answers on its own `/whoami` for the same request. */
      async function assertSameAsTessera(response: JsonResponse, appId: string, authorization?: string): Promise<void> {
        const own = await whoami(appUrlOf(tessera.baseUrl, appId), authorization);
        assert.equal(response.status, own.status, `service ${response.status} ${response.text}; Tessera ${own.status} ${own.text}`);
        assert.deepEqual(response.body, own.body);
        assert.equal(response.headers.get('www-authenticate'), own.headers.get('www-authenticate'));
      }

      describe('the principal of the three modes', () => {
        it('Basic anonymous', async () => {
          const { appId } = tessera.app;
          for (const password of ['anything', '']) {
            const response = await requestAs(serviceUrl(appId, '/principal'), basic(appId, password));
            assert.equal(response.status, 200, response.text);
            assert.deepEqual(response.body, {
              appId,
              kind: 'anonymous',
              id: 'ANONYMOUS',
              auth: 'basic',
              expiresAt: null,
              scopes: null,
              clientId: null,
            });
          }
        });

        it('an anonymous token', async () => {
          const { appId } = tessera.app;
          const token = await anonymousTokenOf(tessera);
          const response = await requestAs(serviceUrl(appId, '/principal'), bearer(token));
          assert.equal(response.status, 200, response.text);
          assert.deepEqual(response.body, {
            appId,
            kind: 'anonymous',
            id: 'ANONYMOUS',
            auth: 'bearer',
            expiresAt: null,
            scopes: null,
            clientId: null,
          });
        });

        it('an anonymous token issued with an attestation says its provider; Basic anonymous access turned off is refused', async () => {
          const created = await tessera.tessera.apps.create('Attested app');
          const app = appOn(tessera, created);
          await tessera.tessera.apps.configure(created.appId, { anonymousAttestation: 'monitor', basicAnonymous: false }, OPERATOR);
          const issued = await requestToken(app, anonymousFields(app), { 'x-tessera-attestation': await powAttestation(app.appUrl) });
          assert.equal(issued.status, 200, issued.text);
          const response = await requestAs(serviceUrl(created.appId, '/principal'), bearer(issued.body.access_token as string));
          assert.equal(response.status, 200, response.text);
          assert.deepEqual(response.body, {
            appId: created.appId,
            kind: 'anonymous',
            id: 'ANONYMOUS',
            auth: 'bearer',
            expiresAt: null,
            scopes: null,
            clientId: null,
            attestation: 'pow',
          });
          const basicRefused = await requestAs(serviceUrl(created.appId, '/principal'), basic(created.appId));
          assert.equal(basicRefused.status, 401, basicRefused.text);
          assert.equal(basicRefused.body.errorCode, 'BASIC_ANONYMOUS_DISABLED');
        });

        it('an admin token, and one with an expiry', async () => {
          const { appId, adminId } = tessera.app;
          const token = await adminTokenOf(tessera);
          const response = await requestAs(serviceUrl(appId, '/principal'), bearer(token));
          assert.equal(response.status, 200, response.text);
          assert.deepEqual(response.body, {
            appId,
            kind: 'admin',
            id: adminId,
            auth: 'bearer',
            expiresAt: null,
            scopes: null,
            clientId: null,
          });

          const expiresAt = Date.now() + 3_600_000;
          const expiring = await adminTokenOf(tessera, { expiresAt });
          const withExpiry = await requestAs(serviceUrl(appId, '/principal'), bearer(expiring));
          assert.equal(withExpiry.status, 200, withExpiry.text);
          assert.deepEqual(withExpiry.body, { appId, kind: 'admin', id: adminId, auth: 'bearer', expiresAt, scopes: null, clientId: null });
        });

        it("a deployed SDK client's anonymous call (X-Kii-AppID and X-Kii-AppKey, no Authorization): Basic anonymous", async () => {
          const { appId, appKey } = tessera.app;
          const sdkHeaders = { 'x-kii-appid': appId, 'x-kii-appkey': appKey };
          const response = await request(serviceUrl(appId, '/principal'), { headers: sdkHeaders });
          assert.equal(response.status, 200, response.text);
          assert.deepEqual(response.body, {
            appId,
            kind: 'anonymous',
            id: 'ANONYMOUS',
            auth: 'basic',
            expiresAt: null,
            scopes: null,
            clientId: null,
          });
          const other = await tessera.tessera.apps.create('Another app');
          const otherApp = await request(serviceUrl(appId, '/principal'), { headers: { ...sdkHeaders, 'x-kii-appid': other.appId } });
          assertUnauthorized(otherApp);
          assertUnauthorized(await request(serviceUrl(appId, '/principal'), { headers: { 'x-kii-appid': appId } }));
        });

        it('the query string does not matter', async () => {
          const { appId } = tessera.app;
          const response = await requestAs(serviceUrl(appId, '/principal?disable_cache=1&me=1'), basic(appId));
          assert.equal(response.status, 200, response.text);
          assert.equal(response.body.auth, 'basic');
        });

        it('routes outside the mounted scope are not authenticated', async () => {
          const response = await requestAs(`${service.baseUrl}/healthz`);
          assert.equal(response.status, 200, response.text);
          assert.equal(response.text, 'ok');
        });
      });

      describe("refusals, with the contract's errors", () => {
        it("a malformed, unknown, forged or other app's token: 401 INVALID_TOKEN, the same as Tessera answers", async () => {
          const { appId } = tessera.app;
          const real = await anonymousTokenOf(tessera);
          const bytes = Buffer.from(real, 'base64url');
          bytes[20]! ^= 0x01;
          const forged = bytes.toString('base64url');
          const other = await tessera.tessera.apps.create('Another app');
          const otherAppsToken = await adminTokenOf(appOn(tessera, other));
          const unknown = randomBytes(32).toString('base64url');
          for (const token of ['not-a-token', '', unknown, forged, otherAppsToken]) {
            const authorization = token === '' ? 'Bearer' : bearer(token);
            const response = await requestAs(serviceUrl(appId, '/principal'), authorization);
            assertInvalidToken(response, token);
            await assertSameAsTessera(response, appId, authorization);
          }
          // The other app's token still works in its own app.
          const own = await requestAs(serviceUrl(other.appId, '/principal'), bearer(otherAppsToken));
          assert.equal(own.status, 200, own.text);
          assert.equal(own.body.appId, other.appId);
        });

        it('no Authorization header, another scheme, or Basic naming another app: 401 UNAUTHORIZED', async () => {
          const { appId } = tessera.app;
          for (const authorization of [undefined, 'Digest username="x"', basic('0123456789abcdef'), 'Basic !!!']) {
            const response = await requestAs(serviceUrl(appId, '/principal'), authorization);
            assertUnauthorized(response);
            await assertSameAsTessera(response, appId, authorization);
          }
        });

        it('an Authorization header sent twice: 400 invalid_request, whatever the two say', async () => {
          const { appId } = tessera.app;
          const admin = await adminTokenOf(tessera);
          const path = new URL(serviceUrl(appId, '/principal')).pathname;
          for (const [first, second] of [
            [basic(appId), bearer(admin)],
            [bearer(admin), basic(appId)],
          ] as const) {
            const response = await rawWithHeaderLines(service.baseUrl, {
              method: 'GET',
              path,
              lines: [
                ['Authorization', first],
                ['Authorization', second],
              ],
            });
            assertError(response, 400, 'invalid_request');
          }
        });

        it('an admin token on a path with a me segment, in any case: 400 ME_NOT_ALLOWED_FOR_ADMIN; anonymous callers pass', async () => {
          const { appId } = tessera.app;
          const admin = await adminTokenOf(tessera);
          const refused = await requestAs(serviceUrl(appId, '/users/me'), bearer(admin));
          assertError(refused, 400, 'ME_NOT_ALLOWED_FOR_ADMIN');
          assert.equal(refused.headers.get('www-authenticate'), null);
          for (const spelling of ['/users/%6De', '/users/ME', '/users/Me']) {
            assertError(await requestAs(serviceUrl(appId, spelling), bearer(admin)), 400, 'ME_NOT_ALLOWED_FOR_ADMIN');
          }

          const anonymous = await anonymousTokenOf(tessera);
          for (const authorization of [bearer(anonymous), basic(appId)]) {
            const response = await requestAs(serviceUrl(appId, '/users/me'), authorization);
            assert.equal(response.status, 200, response.text);
            assert.equal(response.body.kind, 'anonymous');
          }
        });

        it('an admin-only route: 403 ADMIN_REQUIRED for anonymous callers, 200 for an admin token', async () => {
          const { appId, adminId } = tessera.app;
          const anonymous = await anonymousTokenOf(tessera);
          for (const authorization of [bearer(anonymous), basic(appId)]) {
            const response = await requestAs(serviceUrl(appId, '/admin/report'), authorization);
            assertError(response, 403, 'ADMIN_REQUIRED');
          }
          const admin = await adminTokenOf(tessera);
          const response = await requestAs(serviceUrl(appId, '/admin/report'), bearer(admin));
          assert.equal(response.status, 200, response.text);
          assert.deepEqual(response.body, {
            report: 'ok',
            principal: { appId, kind: 'admin', id: adminId, auth: 'bearer', expiresAt: null, scopes: null, clientId: null },
          });
          // Authentication still comes first on an admin-only route.
          assertError(await requestAs(serviceUrl(appId, '/admin/report')), 401, 'UNAUTHORIZED');
        });

        it("a route that needs a scope: a credential's token with it passes, one without gets 403 INSUFFICIENT_SCOPE, anonymous callers 403 ADMIN_REQUIRED", async () => {
          const { appId, adminId } = tessera.app;
          const credentials = tessera.tessera.credentials;
          const reader = await credentials.create(appId, { name: 'reader', scopes: ['reports:read', 'events:read'] }, OPERATOR);
          const other = await credentials.create(appId, { name: 'other', scopes: ['events:read'] }, OPERATOR);
          const tokenOf = (credential: { clientId: string; clientSecret: string }) =>
            adminTokenOf({ app: { ...tessera.app, ...credential }, appUrl: tessera.appUrl });
          const allowed = await requestAs(serviceUrl(appId, '/reports'), bearer(await tokenOf(reader)));
          assert.equal(allowed.status, 200, allowed.text);
          assert.deepEqual(allowed.body, {
            reports: [],
            principal: {
              appId,
              kind: 'admin',
              id: adminId,
              auth: 'bearer',
              expiresAt: null,
              scopes: ['events:read', 'reports:read'],
              clientId: reader.clientId,
            },
          });
          const refused = await requestAs(serviceUrl(appId, '/reports'), bearer(await tokenOf(other)));
          assertError(refused, 403, 'INSUFFICIENT_SCOPE');
          assert.equal(refused.headers.get('www-authenticate'), 'Bearer error="insufficient_scope", scope="reports:read"');
          // The app's own ClientID may do everything.
          assert.equal((await requestAs(serviceUrl(appId, '/reports'), bearer(await adminTokenOf(tessera)))).status, 200);
          assertError(await requestAs(serviceUrl(appId, '/reports'), basic(appId)), 403, 'ADMIN_REQUIRED');
        });

        it('an unknown app: 404 APP_NOT_FOUND, whatever the header', async () => {
          const token = await adminTokenOf(tessera);
          for (const appId of ['0123456789abcdef', 'not an app id']) {
            for (const authorization of [undefined, basic(appId), bearer(token)]) {
              const response = await requestAs(serviceUrl(encodeURIComponent(appId), '/principal'), authorization);
              assertError(response, 404, 'APP_NOT_FOUND');
            }
          }
        });
      });

      it('a token is refused from the instant it expires', async () => {
        const { appId } = tessera.app;
        const expiresAt = Date.now() + 2_000;
        const token = await anonymousTokenOf(tessera, { expiresAt });
        const accepted = await cachedPrincipal(serviceUrl(appId, '/principal'), bearer(token));
        assert.deepEqual(accepted, { appId, kind: 'anonymous', id: 'ANONYMOUS', auth: 'bearer', expiresAt, scopes: null, clientId: null });
        for (;;) {
          const sent = Date.now();
          const response = await requestAs(serviceUrl(appId, '/principal'), bearer(token));
          const answered = Date.now();
          if (response.status === 200) {
            assert.ok(sent < expiresAt, `accepted a request sent ${sent - expiresAt} ms after the expiry`);
          } else {
            assertInvalidToken(response, token);
            assert.ok(answered >= expiresAt, `refused ${expiresAt - answered} ms before the expiry`);
            assert.ok(answered - expiresAt < 250, `refused only ${answered - expiresAt} ms after the expiry`);
            timings.push(
              `${subject.framework} over ${backend.name}: expiry: first refusal answered ${answered - expiresAt} ms after expiresAt`,
            );
            break;
          }
          assert.ok(sent < expiresAt + 1_000, 'still accepted a second after the expiry');
          await sleep(POLL_INTERVAL_MS);
        }
      });

      describe('a change made through Tessera reaches a cached grant within a second', () => {
        it('a token revoked with POST /oauth2/revoke (the token revokes itself)', async () => {
          const { appId } = tessera.app;
          for (const [kind, tokenOf] of [
            ['anonymous', anonymousTokenOf],
            ['admin', adminTokenOf],
          ] as const) {
            const token = await tokenOf(tessera);
            const url = serviceUrl(appId, '/principal');
            assert.equal((await cachedPrincipal(url, bearer(token))).kind, kind);
            const measured = await timeUntilRefused(
              async () => {
                const revoked = await revokeToken(tessera.appUrl, token);
                assert.equal(revoked.status, 200, revoked.text);
              },
              async () => [await requestAs(url, bearer(token))],
              (response) => response.status === 401 && response.body?.errorCode === 'INVALID_TOKEN',
            );
            assertInvalidToken(await requestAs(url, bearer(token)), token);
            record(`${kind} token revoked with POST /oauth2/revoke`, measured);
          }
        });

        it('every token of the app revoked with DELETE /tokens (an admin token)', async () => {
          const { appId } = tessera.app;
          const url = serviceUrl(appId, '/principal');
          const anonymous = await anonymousTokenOf(tessera);
          const admin = await adminTokenOf(tessera);
          const revoker = await adminTokenOf(tessera);
          await cachedPrincipal(url, bearer(admin));
          await cachedPrincipal(url, bearer(anonymous));
          const measured = await timeUntilRefused(
            async () => {
              const revoked = await requestAs(`${tessera.appUrl}/tokens?kind=all`, bearer(revoker), 'DELETE');
              assert.equal(revoked.status, 200, revoked.text);
              assert.equal(revoked.body.revoked >= 2, true, revoked.text); // the admin tokens; anonymous ones are ended by the cut-off
            },
            async () => [await requestAs(url, bearer(anonymous)), await requestAs(url, bearer(admin))],
            (response) => response.status === 401 && response.body?.errorCode === 'INVALID_TOKEN',
          );
          assertInvalidToken(await requestAs(url, bearer(anonymous)), anonymous);
          assertInvalidToken(await requestAs(url, bearer(admin)), admin);
          // Basic needs no token: it still works.
          assert.equal((await requestAs(url, basic(appId))).status, 200);
          record('every token revoked with DELETE /tokens', measured);
        });

        it("an app deleted through Tessera's service: 404 APP_NOT_FOUND, for Basic and for its cached tokens", async () => {
          const doomed = await tessera.tessera.apps.create('Doomed app');
          const url = serviceUrl(doomed.appId, '/principal');
          const token = await adminTokenOf(appOn(tessera, doomed));
          await cachedPrincipal(url, bearer(token));
          await cachedPrincipal(url, basic(doomed.appId));
          const measured = await timeUntilRefused(
            () => tessera.tessera.apps.delete(doomed.appId, OPERATOR),
            async () => [await requestAs(url, basic(doomed.appId)), await requestAs(url, bearer(token))],
            (response) => response.status === 404 && response.body?.errorCode === 'APP_NOT_FOUND',
            // The app's tokens went with it: while the app is still cached, its token may be looked up and not found.
            (response) => response.status === 200 || (response.status === 401 && response.body?.errorCode === 'INVALID_TOKEN'),
          );
          assertError(await requestAs(url, basic(doomed.appId)), 404, 'APP_NOT_FOUND');
          assertError(await requestAs(url, bearer(token)), 404, 'APP_NOT_FOUND');
          record('app deleted', measured);
        });
      });
    });
  }

  after(() => {
    if (timings.length > 0) console.log(`[middleware] propagation:\n${timings.join('\n')}`);
  });
}
