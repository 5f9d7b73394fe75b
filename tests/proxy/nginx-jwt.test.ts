import assert from 'node:assert/strict';
import { createHmac, generateKeyPairSync, sign } from 'node:crypto';
import { existsSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { PACKAGE_ROOT } from '../../src/package-root.js';
import { OPERATOR } from '../../src/request-context.js';
import { assertError, assertInvalidToken, assertUnauthorized, UNAUTHORIZED_CHALLENGE } from '../helpers/assert.js';
import { powAttestation } from '../helpers/attestation.js';
import { FakeClock } from '../helpers/clock.js';
import { createConfiguredApp } from '../helpers/configured-app.js';
import { documentedNjsConfig } from '../helpers/forward-auth-docs.js';
import {
  adminTokenOf,
  anonymousFields,
  anonymousTokenOf,
  basic,
  bearer,
  request,
  requestToken,
  revokeToken,
  type JsonResponse,
} from '../helpers/http.js';
import { closeServer } from '../helpers/listen.js';
import { findNginx, NJS_MODULE, startNginx, startUpstream, type RunningNginx, type Seen } from '../helpers/nginx.js';
import { RecordingProxy } from '../helpers/recording-proxy.js';
import { startServer, type TestServer } from '../helpers/server.js';

// nginx checking an app's JWT access tokens itself, with njs (Debian's libnginx-mod-http-js) and the
// script assets/nginx/tessera-jwt.js, in the configuration docs/forward-auth.md documents (read from
// there), against a real Tessera whose app issues ES256 JWTs. nginx reaches Tessera through a
// recording proxy, which counts its reads of the JWKS.

const HOUR = 3_600_000;

/** A compact JWS of `header` and `claims`, its signature made by `signature` from the signing input. */
function forged(header: object, claims: object, signature: (input: string) => string): string {
  const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const input = `${part(header)}.${part(claims)}`;
  return `${input}.${signature(input)}`;
}

const partsOf = (token: string) => {
  const [header, claims] = token.split('.') as [string, string];
  return {
    header: JSON.parse(Buffer.from(header, 'base64url').toString()) as Record<string, unknown>,
    claims: JSON.parse(Buffer.from(claims, 'base64url').toString()) as Record<string, unknown>,
  };
};

describe('JWT access tokens checked by nginx itself (njs)', () => {
  // The server's clock starts 25 hours back, for a token that has expired by now, then is set to now.
  const clock = new FakeClock(Date.now() - 25 * HOUR - 60_000);
  let tessera: TestServer;
  let jwksProxy: RecordingProxy;
  let upstream: Server | undefined;
  let nginx: RunningNginx | undefined;
  const seen: Seen[] = [];
  let appPath: string;
  let expired: string;
  let eddsa: string;
  let admin: string;
  let anonymous: string;

  const configure = (changes: object) => tessera.tessera.apps.configure(tessera.app.appId, changes, OPERATOR);
  const rotate = async (algorithm: 'EdDSA' | 'ES256') => {
    await tessera.tessera.jwt.keys.rotate({ algorithm, aheadMs: 0 });
    // The next key is made after this one, and this one signs from now on.
    clock.advance(10);
  };
  const jwksReads = () => jwksProxy.requests.filter((recorded) => recorded.url.endsWith('/jwks.json')).length;

  before(async () => {
    const binary = findNginx();
    if (binary === undefined) {
      throw new Error(
        'nginx is not installed (not on PATH, not /usr/sbin/nginx): these tests need it. Install it: apt-get install -y nginx',
      );
    }
    if (!existsSync(NJS_MODULE)) {
      throw new Error(`nginx's JavaScript module is not installed (${NJS_MODULE}): apt-get install -y libnginx-mod-http-js`);
    }
    tessera = await startServer({ clock });
    await configure({ accessTokenFormat: 'jwt' });
    await rotate('ES256');
    expired = await anonymousTokenOf(tessera);
    clock.advance(25 * HOUR + 60_000 - 10);
    await rotate('EdDSA');
    eddsa = await anonymousTokenOf(tessera);
    await rotate('ES256');
    admin = await adminTokenOf(tessera);
    anonymous = await anonymousTokenOf(tessera);
    assert.equal(decodeProtectedHeader(admin).alg, 'ES256');
    assert.equal(decodeProtectedHeader(eddsa).alg, 'EdDSA');
    assert.ok(decodeJwt(expired).exp! * 1000 < Date.now() - HOUR, 'expired an hour ago');

    jwksProxy = new RecordingProxy();
    jwksProxy.target = tessera.baseUrl;
    await jwksProxy.start();
    upstream = await startUpstream(seen);
    const config = (port: number) =>
      documentedNjsConfig({
        tessera: new URL(jwksProxy.baseUrl).host,
        upstream: `127.0.0.1:${(upstream!.address() as AddressInfo).port}`,
        port,
        publicUrl: tessera.baseUrl,
        appId: tessera.app.appId,
        script: join(PACKAGE_ROOT, 'assets', 'nginx', 'tessera-jwt.js'),
        // In nginx's own temp dir.
        cache: 'tessera-jwks',
      });
    nginx = await startNginx(binary, config, [`load_module ${NJS_MODULE};`]);
    appPath = `/api/apps/${tessera.app.appId}`;
  });

  after(async () => {
    await nginx?.stop();
    await closeServer(upstream);
    await jwksProxy?.close();
    await tessera?.close();
  });

  function viaNginx(path: string, init: RequestInit = {}): Promise<JsonResponse> {
    return request(`${nginx!.baseUrl}${path}`, init);
  }

  /** The identity headers forward authentication would give for `token`. */
  function identityOf(token: string, extra: Record<string, string> = {}): Record<string, string> {
    const claims = decodeJwt(token);
    const anonymous = claims.sub === 'ANONYMOUS';
    return {
      'x-tessera-app-id': tessera.app.appId,
      'x-tessera-principal': anonymous ? 'anonymous' : 'admin',
      'x-tessera-principal-id': anonymous ? 'ANONYMOUS' : tessera.app.adminId,
      'x-tessera-auth': 'bearer',
      'x-tessera-expires-at': String(claims.exp! * 1000),
      ...extra,
    };
  }

  function assertReached(response: JsonResponse, expected: Omit<Seen, 'bodyBytes'> & { bodyBytes?: number }): void {
    assert.equal(response.status, 200, `${response.status} ${response.text}\n${nginx!.log()}`);
    assert.deepEqual(response.body, { bodyBytes: 0, ...expected });
  }

  /** The reasons the script logged for its refusals, in order. */
  const refusals = () => [...nginx!.log().matchAll(/tessera-jwt: refused \((\w+)\)/g)].map((match) => match[1]);

  /** Sends `token` and asserts 401 INVALID_TOKEN, the upstream not reached, and the reason logged. */
  async function assertRefused(token: string, problem: string): Promise<void> {
    const before = { seen: seen.length, refusals: refusals().length };
    const response = await viaNginx(`${appPath}/whoami`, { headers: { authorization: bearer(token) } });
    assertInvalidToken(response, token);
    assert.deepEqual(seen.slice(before.seen), [], 'a refused request reached the upstream');
    assert.deepEqual(refusals().slice(before.refusals), [problem]);
  }

  describe('admitted requests reach the upstream with the identity headers', () => {
    it('an admin token and an anonymous token, with the request body; the JWKS read once', async () => {
      const admitted = await viaNginx(`${appPath}/reports?x=1`, { headers: { authorization: bearer(admin) } });
      assertReached(admitted, { method: 'GET', url: `${appPath}/reports?x=1`, identity: identityOf(admin) });
      const body = 'x'.repeat(20_000); // larger than nginx's in-memory body buffer: goes through its temp files
      for (const token of [anonymous, admin]) {
        const response = await viaNginx(`${appPath}/objects`, { method: 'POST', headers: { authorization: bearer(token) }, body });
        assertReached(response, { method: 'POST', url: `${appPath}/objects`, identity: identityOf(token), bodyBytes: body.length });
      }
      assert.equal(jwksReads(), 1, 'nginx keeps the JWKS');
      assert.equal(jwksProxy.requests[0]!.url, `${appPath}/jwks.json`);
      assert.equal(jwksProxy.requests[0]!.headers.authorization, undefined, "the client's Authorization is not passed on to the JWKS");
    });

    it('never with the X-Tessera-* headers a client sends', async () => {
      const forgedHeaders = {
        'x-tessera-attestation-provider': 'apple',
        'x-tessera-scope': 'credentials:manage',
        'x-tessera-app-id': 'another-app',
        'x-tessera-principal': 'admin',
        'x-tessera-principal-id': 'forged-admin',
        'x-tessera-auth': 'basic',
        'x-tessera-expires-at': '1',
      };
      const response = await viaNginx(`${appPath}/whoami`, { headers: { authorization: bearer(anonymous), ...forgedHeaders } });
      assertReached(response, { method: 'GET', url: `${appPath}/whoami`, identity: identityOf(anonymous) });
    });

    it("a credential's token, with X-Tessera-Scope", async () => {
      const credential = await tessera.tessera.credentials.create(
        tessera.app.appId,
        { name: 'Reports', scopes: ['reports:read', 'events:read'] },
        OPERATOR,
      );
      const issued = await requestToken(tessera, {
        grant_type: 'client_credentials',
        client_id: credential.clientId,
        client_secret: credential.clientSecret,
      });
      assert.equal(issued.status, 200, issued.text);
      const token = issued.body.access_token as string;
      const response = await viaNginx(`${appPath}/reports`, { headers: { authorization: bearer(token) } });
      assertReached(response, {
        method: 'GET',
        url: `${appPath}/reports`,
        identity: identityOf(token, { 'x-tessera-scope': 'events:read reports:read' }),
      });
    });

    it('an attested anonymous token, with X-Tessera-Attestation-Provider', async () => {
      await configure({ anonymousAttestation: 'monitor' });
      try {
        const issued = await requestToken(tessera, anonymousFields(tessera), {
          'x-tessera-attestation': await powAttestation(tessera.appUrl),
        });
        assert.equal(issued.status, 200, issued.text);
        const token = issued.body.access_token as string;
        const response = await viaNginx(`${appPath}/whoami`, { headers: { authorization: bearer(token) } });
        assertReached(response, {
          method: 'GET',
          url: `${appPath}/whoami`,
          identity: identityOf(token, { 'x-tessera-attestation-provider': 'pow' }),
        });
      } finally {
        await configure({ anonymousAttestation: 'off' });
      }
    });

    // Before any test of a kid not published: the second copy of the JWKS (30 s) must not be older than this key.
    it('a token of a key rotated in at once: the JWKS read again for its unknown kid', async () => {
      const reads = jwksReads();
      await rotate('ES256');
      const token = await adminTokenOf(tessera);
      assert.notEqual(decodeProtectedHeader(token).kid, decodeProtectedHeader(admin).kid);
      const response = await viaNginx(`${appPath}/whoami`, { headers: { authorization: bearer(token) } });
      assertReached(response, { method: 'GET', url: `${appPath}/whoami`, identity: identityOf(token) });
      assert.equal(jwksReads(), reads + 1);
      // Read again within 30 seconds: from the second copy, like the first, with no read of Tessera.
      assertReached(await viaNginx(`${appPath}/whoami`, { headers: { authorization: bearer(token) } }), {
        method: 'GET',
        url: `${appPath}/whoami`,
        identity: identityOf(token),
      });
      assert.equal(jwksReads(), reads + 1);
      // The tokens of the key before it still pass.
      assertReached(await viaNginx(`${appPath}/whoami`, { headers: { authorization: bearer(admin) } }), {
        method: 'GET',
        url: `${appPath}/whoami`,
        identity: identityOf(admin),
      });
    });

    it('a revoked token still passes until it expires: the status list is not read (documented)', async () => {
      const token = await anonymousTokenOf(tessera);
      assert.equal((await revokeToken(tessera.appUrl, token)).status, 200);
      assertError(await request(`${tessera.appUrl}/whoami`, { headers: { authorization: bearer(token) } }), 401, 'INVALID_TOKEN');
      const response = await viaNginx(`${appPath}/whoami`, { headers: { authorization: bearer(token) } });
      assertReached(response, { method: 'GET', url: `${appPath}/whoami`, identity: identityOf(token) });
    });
  });

  describe('refusals: 401 with the contract body and challenge, the upstream never reached', () => {
    it('no token: 401 UNAUTHORIZED', async () => {
      const before = seen.length;
      const response = await viaNginx(`${appPath}/whoami`);
      assertUnauthorized(response, UNAUTHORIZED_CHALLENGE);
      assert.deepEqual(seen.slice(before), []);
    });

    it("Basic anonymous access, which needs the app's configuration: 401 INVALID_TOKEN", async () => {
      const before = seen.length;
      const response = await viaNginx(`${appPath}/whoami`, { headers: { authorization: basic(tessera.app.appId) } });
      assertInvalidToken(response);
      assert.match(response.body.message, /JWT access tokens only/);
      assert.deepEqual(seen.slice(before), []);
    });

    it("an EdDSA token (Tessera's default key): njs 0.7 has no Ed25519", async () => {
      await assertRefused(eddsa, 'algorithm');
    });

    it('forged: alg none, HS256 with the public key, ES256 under the EdDSA key, another key, altered claims', async () => {
      const { header, claims } = partsOf(admin);
      const jwks = (await (await fetch(`${tessera.appUrl}/jwks.json`)).json()) as { keys: { kid: string; alg: string }[] };
      const publicJwk = jwks.keys.find((key) => key.kid === header.kid)!;
      const eddsaKid = decodeProtectedHeader(eddsa).kid!;
      const stranger = generateKeyPairSync('ec', { namedCurve: 'P-256' });
      const signedByStranger = (input: string) =>
        sign('sha256', Buffer.from(input), { key: stranger.privateKey, dsaEncoding: 'ieee-p1363' }).toString('base64url');
      const genuineSignature = admin.split('.')[2]!;
      await assertRefused(
        forged({ ...header, alg: 'none' }, claims, () => ''),
        'algorithm',
      );
      await assertRefused(
        forged({ ...header, alg: 'HS256' }, claims, (input) =>
          createHmac('sha256', JSON.stringify(publicJwk)).update(input).digest('base64url'),
        ),
        'algorithm',
      );
      await assertRefused(forged({ ...header, kid: eddsaKid }, claims, signedByStranger), 'algorithm');
      await assertRefused(forged(header, claims, signedByStranger), 'signature');
      await assertRefused(
        forged(header, { ...claims, exp: (claims.exp as number) + 3600 }, () => genuineSignature),
        'signature',
      );
      await assertRefused(
        forged(header, claims, () => Buffer.alloc(64).toString('base64url')),
        'signature',
      );
    });

    it("another app's token (its issuer and audience), and one of another audience", async () => {
      const other = await createConfiguredApp(tessera, { accessTokenFormat: 'jwt' });
      const foreign = await anonymousTokenOf(other);
      const signing = decodeProtectedHeader(await adminTokenOf(tessera)).kid;
      assert.equal(decodeProtectedHeader(foreign).kid, signing, 'signed by the same key');
      await assertRefused(foreign, 'issuer');
      await configure({ accessTokenAudience: ['https://orders.example/api'] });
      try {
        const token = await anonymousTokenOf(tessera);
        assert.equal(decodeJwt(token).iss, tessera.appUrl);
        await assertRefused(token, 'audience');
      } finally {
        await configure({ accessTokenAudience: null });
      }
    });

    it('an expired token, signed by a published key', async () => {
      assert.ok(
        ((await (await fetch(`${tessera.appUrl}/jwks.json`)).json()) as { keys: { kid: string }[] }).keys.some(
          (key) => key.kid === decodeProtectedHeader(expired).kid,
        ),
      );
      await assertRefused(expired, 'expired');
    });

    it('malformed: not a JWT, two parts, a signature not base64url, a header not JSON, an opaque token', async () => {
      const [headerPart, claimsPart] = admin.split('.') as [string, string];
      const opaqueApp = await createConfiguredApp(tessera, {});
      const opaque = await adminTokenOf(opaqueApp);
      assert.equal(opaque.length, 43);
      for (const token of [
        'not-a-token',
        `${headerPart}.${claimsPart}`,
        `${headerPart}.${claimsPart}.***`,
        `${Buffer.from('{"alg":').toString('base64url')}.${claimsPart}.${admin.split('.')[2]}`,
        opaque,
        'x'.repeat(7000),
      ]) {
        await assertRefused(token, 'malformed');
      }
    });

    it('a kid not published: the JWKS read again at most once per 30 seconds', async () => {
      const { header, claims } = partsOf(admin);
      const stranger = generateKeyPairSync('ec', { namedCurve: 'P-256' });
      const token = forged({ ...header, kid: 'not-a-published-key' }, claims, (input) =>
        sign('sha256', Buffer.from(input), { key: stranger.privateKey, dsaEncoding: 'ieee-p1363' }).toString('base64url'),
      );
      const reads = jwksReads();
      await assertRefused(token, 'unknown_key');
      await assertRefused(token, 'unknown_key');
      // The rotation's test read the JWKS again within these 30 seconds, or this one does, once.
      assert.ok(jwksReads() <= reads + 1, `${jwksReads() - reads} reads`);
    });
  });
});
