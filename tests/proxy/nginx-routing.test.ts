import assert from 'node:assert/strict';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import express, { type Request, type Response } from 'express';
import type { CreatedApp } from '../../src/apps/service.js';
import { parseAdminPathRules } from '../../src/auth/forward.js';
import { assertError } from '../helpers/assert.js';
import { documentedNginxConfig } from '../helpers/forward-auth-docs.js';
import { adminTokenOf, anonymousTokenOf, appOn, basic, bearer } from '../helpers/http.js';
import { closeServer } from '../helpers/listen.js';
import { findNginx, startNginx, type RunningNginx } from '../helpers/nginx.js';
import { rawRequest, type RawResponse } from '../helpers/raw-http.js';
import { startServer, type TestServer } from '../helpers/server.js';

// The whole chain of forward authentication, as the security review attacked it: a client, nginx with
// the documented configuration, Tessera, and a real Express upstream that routes by app (with
// Express's defaults: case-insensitive routes, decoded parameters). Whatever the client sends, no
// request may reach one app's route with another app's identity, an admin route without an admin
// token, or a "me" route with one. The upstream here does not check X-Tessera-App-Id itself.

const ADMIN_PATHS = ['/admin', '/configuration'];

/** What the Express upstream saw of one request that reached it. */
interface Routed {
  route: 'files' | 'admin' | 'configuration' | 'user' | 'other';
  /** The app in the path, as Express routed it (decoded). */
  routedAppId: string | undefined;
  userId: string | undefined;
  url: string;
  identity: Record<string, string>;
}

function startExpressUpstream(routed: Routed[]): Promise<Server> {
  const app = express();
  const record = (route: Routed['route']) => (req: Request, res: Response) => {
    const params = req.params as Record<string, string | undefined>;
    const identity = Object.fromEntries(
      Object.entries(req.headers).filter((entry): entry is [string, string] => entry[0].startsWith('x-tessera-')),
    );
    const seen: Routed = { route, routedAppId: params.appId, userId: params.userId, url: req.originalUrl, identity };
    routed.push(seen);
    res.json(seen);
  };
  app.all('/api/apps/:appId/files/*rest', record('files'));
  app.all('/api/apps/:appId/admin{/*rest}', record('admin'));
  app.all('/api/apps/:appId/configuration{/*rest}', record('configuration'));
  app.all('/api/apps/:appId/users/:userId{/*rest}', record('user'));
  app.all('/{*rest}', record('other'));
  return new Promise((resolve, reject) => {
    const server = app.listen(0, '127.0.0.1', (error?: Error) => (error === undefined ? resolve(server) : reject(error)));
  });
}

describe('forward authentication through nginx to an Express upstream that routes by app', () => {
  let tessera: TestServer;
  let upstream: Server | undefined;
  let nginx: RunningNginx | undefined;
  const routed: Routed[] = [];
  let appA: CreatedApp;
  let appB: CreatedApp;
  /** Every way of calling, for app A (the attacker's) and app B. */
  let credentials: { name: string; authorization: string }[];

  before(async () => {
    const binary = findNginx();
    if (binary === undefined) throw new Error('nginx is not installed: apt-get install -y nginx');
    tessera = await startServer({ forwardAuthAdminPaths: parseAdminPathRules(ADMIN_PATHS) });
    upstream = await startExpressUpstream(routed);
    const upstreamAddress = `127.0.0.1:${(upstream.address() as AddressInfo).port}`;
    nginx = await startNginx(binary, (port) => documentedNginxConfig(new URL(tessera.baseUrl).host, upstreamAddress, port));
    appA = tessera.app;
    appB = await tessera.tessera.apps.create('App B');
    credentials = [];
    for (const [label, app] of [
      ['A', appA],
      ['B', appB],
    ] as const) {
      credentials.push(
        { name: `admin token of ${label}`, authorization: bearer(await adminTokenOf(appOn(tessera, app))) },
        { name: `anonymous token of ${label}`, authorization: bearer(await anonymousTokenOf(appOn(tessera, app))) },
        { name: `Basic ${label}`, authorization: basic(app.appId) },
      );
    }
  });

  after(async () => {
    await nginx?.stop();
    await closeServer(upstream);
    await tessera?.close();
  });

  /** Sent as-is (like `curl --path-as-is`): fetch would resolve dot segments first. */
  async function viaNginx(method: string, path: string, authorization: string): Promise<{ response: RawResponse; reached: Routed[] }> {
    const before = routed.length;
    const response = await rawRequest(nginx!.baseUrl, { method, path, headers: { authorization } });
    assert.ok(response !== null, `nginx closed the connection without answering ${path}`);
    return { response, reached: routed.slice(before) };
  }

  /** The invariant: what reached a route carries the identity that route may serve. */
  function assertSafe(path: string, credential: string, reached: Routed[]): void {
    const where = `${credential} on ${JSON.stringify(path)}`;
    assert.ok(reached.length <= 1, where);
    const seen = reached[0];
    if (seen === undefined || seen.route === 'other') return;
    assert.equal(
      seen.identity['x-tessera-app-id'],
      seen.routedAppId,
      `${where} reached app ${seen.routedAppId}'s ${seen.route} route as ${JSON.stringify(seen.identity)}`,
    );
    if (seen.route === 'admin' || seen.route === 'configuration') {
      assert.equal(seen.identity['x-tessera-principal'], 'admin', `${where} reached an admin route as ${JSON.stringify(seen.identity)}`);
    }
    if (seen.route === 'user' && seen.userId?.toLowerCase() === 'me') {
      assert.notEqual(seen.identity['x-tessera-principal'], 'admin', `${where} reached a "me" route with an admin token`);
    }
  }

  /** Each spelling that some server reads otherwise than another, as the review sent them. */
  function attacks(): string[] {
    const A = appA.appId;
    const B = appB.appId;
    return [
      // Finding 1: dot segments steer the upstream to another app, or out of an admin rule.
      `/api/apps/${B}/files/%2e%2e/%2e%2e/${A}/files/x`,
      `/api/apps/${B}/files/../../${A}/files/x`,
      `/api/apps/${B}/files/%2E%2E/%2E%2E/${A}/files/x`,
      `/api/apps/${B}/files/.%2e/.%2e/${A}/files/x`,
      `/api/apps/${A}/files/%2e%2e/%2e%2e/${B}/files/x`,
      `/api/apps/${A}/admin/%2e%2e/x`,
      `/api/apps/${A}/admin/../x`,
      `/api/apps/${A}/x/%2e%2e/admin`,
      `/api/apps/${A}/./admin`,
      // Needless percent-encoding, encoded slashes and backslashes.
      `/api/apps/${A}/%61dmin`,
      `/api/apps/${A}/users/%6De`,
      `/api/apps/${B.slice(0, -1)}%${B.charCodeAt(B.length - 1).toString(16)}/files/x`,
      `/api/apps/${B}/files%2F..%2F..%2F${A}%2Ffiles%2Fx`,
      `/api/apps/${B}/files/..%2F..%2F${A}/files/x`,
      `/api/apps/${B}/files/..%5C..%5C${A}/files/x`,
      `/api/apps/${A}/admin%2Fx`,
      // Path parameters, control characters, double encoding, empty segments.
      `/api/apps/${A}/admin;x=1`,
      `/api/apps/${A};x/admin`,
      `/api/apps/${A}/admin%3B`,
      `/api/apps/${A}/admin%00`,
      `/api/apps/${A}/admin%0a`,
      `/api/apps/${A}/%252e%252e/admin`,
      `/api/apps/${A}//admin`,
      `//api/apps/${A}/admin`,
      // Finding 2: case.
      `/api/apps/${A}/ADMIN`,
      `/api/apps/${A}/Admin/x`,
      `/api/apps/${A}/CONFIGURATION`,
      `/api/apps/${A}/users/ME`,
      `/api/apps/${A}/users/Me/things`,
      `/API/APPS/${A}/admin`,
      // The plain spellings, for contrast.
      `/api/apps/${A}/admin`,
      `/api/apps/${A}/users/me`,
      `/api/apps/${A}/files/x`,
      `/api/apps/${B}/files/x`,
    ];
  }

  it('no spelling reaches a route with another app\'s identity, an admin route without an admin token, or "me" with one', async () => {
    let reachedCount = 0;
    for (const path of attacks()) {
      for (const { name, authorization } of credentials) {
        for (const method of ['GET', 'HEAD', 'POST']) {
          const { reached } = await viaNginx(method, path, authorization);
          assertSafe(path, `${method} with ${name}`, reached);
          reachedCount += reached.length;
        }
      }
    }
    // The plain spellings do reach the upstream: the check above is not vacuous.
    assert.ok(reachedCount > 0);
  });

  it("refuses the review's spellings with the contract's 400 before the upstream", async () => {
    const A = appA.appId;
    const B = appB.appId;
    const adminOfA = credentials[0]!.authorization;
    for (const path of [
      `/api/apps/${B}/files/%2e%2e/%2e%2e/${A}/files/x`,
      `/api/apps/${A}/admin/%2e%2e/x`,
      `/api/apps/${A}/%61dmin`,
      `/api/apps/${B}/files/..%2F..%2F${A}/files/x`,
      `/api/apps/${A}/admin;x=1`,
      `/api/apps/${A}/admin%0a`,
    ]) {
      const { response, reached } = await viaNginx('GET', path, adminOfA);
      assert.deepEqual(reached, [], path);
      assert.equal(response.body?.errorCode, 'invalid_request', `${path}: ${response.status} ${response.text}`);
      assertError(response, 400, 'invalid_request');
    }
  });

  it('matches admin paths and the /me rule in any case', async () => {
    const A = appA.appId;
    const [adminOfA, anonymousOfA, basicA] = credentials.map((credential) => credential.authorization);
    for (const path of [`/api/apps/${A}/ADMIN`, `/api/apps/${A}/Admin/x`, `/api/apps/${A}/CONFIGURATION`]) {
      for (const authorization of [anonymousOfA!, basicA!]) {
        const { response, reached } = await viaNginx('GET', path, authorization);
        assert.deepEqual(reached, [], path);
        assertError(response, 403, 'ADMIN_REQUIRED');
      }
      const admitted = await viaNginx('GET', path, adminOfA!);
      assert.equal(admitted.reached[0]?.identity['x-tessera-principal'], 'admin', path);
    }
    for (const path of [`/api/apps/${A}/users/ME`, `/api/apps/${A}/users/Me/things`]) {
      const { response, reached } = await viaNginx('GET', path, adminOfA!);
      assert.deepEqual(reached, [], path);
      assertError(response, 400, 'ME_NOT_ALLOWED_FOR_ADMIN');
    }
  });

  it('HEAD under an admin path is refused like GET (Express answers HEAD with the GET handler)', async () => {
    const anonymousOfA = credentials[1]!.authorization;
    const { response, reached } = await viaNginx('HEAD', `/api/apps/${appA.appId}/admin`, anonymousOfA);
    assert.deepEqual(reached, []);
    assert.equal(response.status, 403);
  });
});
