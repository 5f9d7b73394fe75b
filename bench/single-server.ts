import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openSqliteStore } from '../src/store/sqlite/store.js';
import { OPERATOR } from '../src/request-context.js';
import { createTessera } from '../src/tessera.js';
import type { JwtAlgorithm } from 'tessera-tokens/internal/jwt/access-token.js';
import { tesseraCases, type BenchCase } from './cases.js';
import { startPinnedServer, type RunningServer } from './processes.js';

const DIST = fileURLToPath(new URL('../', import.meta.url));

/**
 * The cases `bench:profile` and `bench:cpu` know, by short name: those of `tesseraCases`, in its
 * order, then a credential's (issue 27): an admin token issued from a credential with scopes, and
 * whoami with such a token, to compare with `admin` and `whoami-admin`; then `JWT_CASE_NAMES`.
 */
export const CASE_NAMES = [
  'admin',
  'anonymous',
  'whoami-anonymous',
  'whoami-admin',
  'whoami-basic',
  'forward-auth',
  'admin-scoped',
  'whoami-scoped',
  'admin-jwt',
  'anonymous-jwt',
  'whoami-admin-jwt',
  'whoami-anonymous-jwt',
] as const;

/**
 * The cases of an app whose `accessTokenFormat` is `jwt`, to compare with `admin`, `anonymous`,
 * `whoami-admin` and `whoami-anonymous`: its admin and anonymous tokens issued, and whoami with
 * each, signed with the key of `SingleServerOptions.jwtAlgorithm`.
 */
export const JWT_CASE_NAMES: readonly (typeof CASE_NAMES)[number][] = [
  'admin-jwt',
  'anonymous-jwt',
  'whoami-admin-jwt',
  'whoami-anonymous-jwt',
];

export interface SingleServerOptions {
  /** The algorithm of the JWT key that signs (EdDSA by default): made before the server starts, as `tessera keys rotate --jwt --ahead 0` makes it. */
  jwtAlgorithm?: JwtAlgorithm;
}

export interface SingleServer {
  server: RunningServer;
  /** Keyed by `CASE_NAMES`. */
  cases: Map<string, BenchCase>;
  /** A temporary directory of this run (the store, and what node writes there); removed by `stop`. */
  work: string;
  stop(): Promise<void>;
}

/**
 * One `tessera serve` on a fresh SQLite store with two apps (one with opaque tokens, one with JWT
 * access tokens), pinned to the server core, rate limits off, with a token of each kind for the
 * check cases.
 */
export async function startSingleServer(
  nodeArgs: (work: string) => string[] = () => [],
  env: Record<string, string> = {},
  { jwtAlgorithm = 'EdDSA' }: SingleServerOptions = {},
): Promise<SingleServer> {
  const work = mkdtempSync(join(tmpdir(), 'tessera-bench-'));
  const path = join(work, 'tessera.db');
  const store = openSqliteStore(path);
  const keyEncryptionKey = randomBytes(32);
  const tessera = createTessera({ store, keyEncryptionKey });
  const app = await tessera.apps.create('Bench app');
  const credential = await tessera.credentials.create(
    app.appId,
    { name: 'Bench credential', scopes: ['events:read', 'reports:read'] },
    OPERATOR,
  );
  const jwtApp = await tessera.apps.create('Bench JWT app');
  await tessera.apps.configure(jwtApp.appId, { accessTokenFormat: 'jwt' }, OPERATOR);
  await tessera.jwt.keys.rotate({ algorithm: jwtAlgorithm, aheadMs: 0 });
  await tessera.close();

  const server = await startPinnedServer(
    'tessera',
    join(DIST, 'src', 'cli', 'main.js'),
    ['serve'],
    {
      DATABASE_URL: `sqlite:${path}`,
      PORT: '0',
      RATE_LIMITS: 'off',
      DEMO_APP: 'off',
      LOG_LEVEL: 'info',
      KEY_ENCRYPTION_KEY: keyEncryptionKey.toString('base64url'),
      ...env,
    },
    nodeArgs(work),
  );
  const token = async (clientId: string, clientSecret: string, appId = app.appId) => {
    const response = await fetch(`${server.url}/api/apps/${appId}/oauth2/token`, {
      method: 'POST',
      headers: { authorization: `Basic ${Buffer.from(`${appId}:x`).toString('base64')}`, 'content-type': 'application/json' },
      body: JSON.stringify({ grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret }),
    });
    return ((await response.json()) as { access_token: string }).access_token;
  };
  const cases = tesseraCases({
    target: 'tessera/sqlite',
    url: server.url,
    appId: app.appId,
    appKey: app.appKey,
    clientId: app.clientId,
    clientSecret: app.clientSecret,
    adminToken: await token(app.clientId, app.clientSecret),
    anonymousToken: await token(app.appId, app.appKey),
  });
  cases.push(...credentialCases(server.url, app.appId, credential, await token(credential.clientId, credential.clientSecret)));
  cases.push(
    ...jwtCases(
      server.url,
      jwtApp,
      await token(jwtApp.clientId, jwtApp.clientSecret, jwtApp.appId),
      await token(jwtApp.appId, jwtApp.appKey, jwtApp.appId),
    ),
  );
  return {
    server,
    cases: new Map(CASE_NAMES.map((name, index) => [name, cases[index]!])),
    work,
    async stop() {
      await server.stop();
      rmSync(work, { recursive: true, force: true });
    },
  };
}

/** `admin-scoped` and `whoami-scoped`: `admin` and `whoami-admin` with a credential's ClientID and token. */
function credentialCases(
  url: string,
  appId: string,
  credential: { clientId: string; clientSecret: string },
  scopedToken: string,
): BenchCase[] {
  const target = 'tessera/sqlite';
  return [
    {
      name: `${target}: admin token from a credential`,
      target,
      kind: 'issue',
      collectTokens: true,
      load: {
        url,
        method: 'POST',
        path: `/api/apps/${appId}/oauth2/token`,
        body: JSON.stringify({ grant_type: 'client_credentials', client_id: credential.clientId, client_secret: credential.clientSecret }),
        contentType: 'application/json',
        authorization: `Basic ${Buffer.from(`${appId}:bench`).toString('base64')}`,
      },
    },
    {
      name: `${target}: whoami, a credential's admin Bearer`,
      target,
      kind: 'check',
      load: { url, method: 'GET', path: `/api/apps/${appId}/whoami`, authorization: `Bearer ${scopedToken}` },
    },
  ];
}

/** `JWT_CASE_NAMES`: `admin`, `anonymous`, `whoami-admin` and `whoami-anonymous` for an app whose `accessTokenFormat` is `jwt`. */
function jwtCases(
  url: string,
  app: { appId: string; appKey: string; clientId: string; clientSecret: string },
  adminToken: string,
  anonymousToken: string,
): BenchCase[] {
  const target = 'tessera/sqlite';
  if (!adminToken.startsWith('eyJ') || !anonymousToken.startsWith('eyJ'))
    throw new Error('the JWT app was answered with tokens that are not JWTs');
  const issue = (name: string, clientId: string, clientSecret: string): BenchCase => ({
    name: `${target}: ${name}`,
    target,
    kind: 'issue',
    collectTokens: true,
    load: {
      url,
      method: 'POST',
      path: `/api/apps/${app.appId}/oauth2/token`,
      body: JSON.stringify({ grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret }),
      contentType: 'application/json',
      authorization: `Basic ${Buffer.from(`${app.appId}:bench`).toString('base64')}`,
    },
  });
  const whoami = (name: string, token: string): BenchCase => ({
    name: `${target}: ${name}`,
    target,
    kind: 'check',
    load: { url, method: 'GET', path: `/api/apps/${app.appId}/whoami`, authorization: `Bearer ${token}` },
  });
  return [
    issue('admin token, JWT', app.clientId, app.clientSecret),
    issue('anonymous token, JWT', app.appId, app.appKey),
    whoami('whoami, JWT admin Bearer', adminToken),
    whoami('whoami, JWT anonymous Bearer', anonymousToken),
  ];
}
