import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { CLIENT_SECRET_PREFIX } from '../../src/apps/secret-format.js';
import { clientSecretDigest } from 'tessera-tokens/internal/crypto.js';
import { assertError } from '../helpers/assert.js';
import { childrenOfFile, createAppWithCli, runCli, sleep, startTessera, terminate, type CreatedApp } from '../helpers/fleet.js';
import { basic, bearer, request, type JsonResponse } from '../helpers/http.js';
import { TESSERA_MAIN, type ServerProcess } from '../helpers/process.js';
import { createPostgresDatabase } from '../helpers/store.js';

/**
 * A full run of the real `tessera serve` (debug logs, request logs, rate limits on) over every
 * endpoint, with right and wrong credentials sent every way they can be, on SQLite and on
 * PostgreSQL. Afterwards no ClientSecret, wrong secret, wrong AppKey or token may be found in the
 * store's bytes (every SQLite file; every PostgreSQL row as text), in stdout or stderr, or in what
 * the operator and the admin can read back (CLI output, the events, introspection). Each search is
 * shown to be able to fail: it finds values that are stored or logged on purpose.
 */

// This file compiles to <outDir>/tests/process/; the CLI it runs is the one compiled beside it.

const children = childrenOfFile();

// ---------------------------------------------------------------------------------------------
// The scanner

/** The byte strings a value could have been written as. */
type Forms = Buffer[];

function textForms(value: string): Forms {
  return [Buffer.from(value, 'utf8'), Buffer.from(value, 'utf16le')];
}

/** A secret as text, its raw bytes when it is hex (as ClientSecrets were, and imported ones are), and a new ClientSecret's random part alone. */
function secretForms(secret: string): Forms {
  const forms = textForms(secret);
  if (/^(?:[0-9a-f]{2}){16,}$/i.test(secret)) forms.push(Buffer.from(secret, 'hex'));
  if (secret.startsWith(CLIENT_SECRET_PREFIX)) forms.push(...textForms(secret.slice(CLIENT_SECRET_PREFIX.length, -6)));
  return forms;
}

/** A token as text, its 32 bytes, and its verifier (the secret half) raw, in hex and in base64. */
function tokenForms(token: string): Forms {
  const bytes = Buffer.from(token, 'base64url');
  const verifier = bytes.subarray(16);
  return [...textForms(token), bytes, verifier, Buffer.from(verifier.toString('hex')), Buffer.from(verifier.toString('base64'))];
}

/** How bytes the store keeps on purpose appear: raw (SQLite blobs) or as hex (PostgreSQL's bytea as JSON). */
function storedForms(bytes: Buffer): Forms {
  return [bytes, Buffer.from(bytes.toString('hex'))];
}

function containsAny(haystack: Buffer, forms: Forms): boolean {
  return forms.some((form) => form.length > 0 && haystack.includes(form));
}

/** Named values, each with its forms; `foundIn` names those any form of which is in the haystack. */
class Watchlist {
  readonly #entries = new Map<string, Forms>();
  /** The name under which each value (its first form) was added. */
  readonly #names = new Map<string, string>();

  /** A value added before (the same first form) keeps its name and gains the forms it lacked. */
  add(name: string, forms: Forms): void {
    const value = forms[0]?.toString('hex') ?? '';
    const known = this.#names.get(value);
    if (known !== undefined) {
      const entry = this.#entries.get(known)!;
      for (const form of forms) if (!entry.some((existing) => existing.equals(form))) entry.push(form);
      return;
    }
    let key = name;
    for (let n = 2; this.#entries.has(key); n++) key = `${name} (${n})`;
    this.#names.set(value, key);
    this.#entries.set(key, [...forms]);
  }

  get size(): number {
    return this.#entries.size;
  }

  names(): string[] {
    return [...this.#entries.keys()];
  }

  foundIn(haystack: Buffer): string[] {
    return [...this.#entries].filter(([, forms]) => containsAny(haystack, forms)).map(([name]) => name);
  }
}

// ---------------------------------------------------------------------------------------------
// The stores

interface Backend {
  name: 'SQLite' | 'PostgreSQL';
  databaseUrl: string;
  /** Every byte the store holds now, to search. */
  snapshot(): Promise<Buffer>;
  dispose(): Promise<void>;
}

function sqliteBackend(dir: string): Backend {
  const path = join(dir, 'tessera.db');
  return {
    name: 'SQLite',
    databaseUrl: `sqlite:${path}`,
    async snapshot() {
      const files = [path, `${path}-wal`, `${path}-shm`, `${path}-journal`].filter((file) => existsSync(file));
      assert.ok(files.includes(path), `no database file at ${path}`);
      return Buffer.concat(files.map((file) => readFileSync(file)));
    },
    async dispose() {},
  };
}

/** Every row of every table of the public schema, as `row_to_json(t)::text`, one per line. */
async function dumpPostgres(databaseUrl: string): Promise<Buffer> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const tables = (
      await client.query<{ name: string }>(
        `SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY 1`,
      )
    ).rows.map((row) => row.name);
    for (const expected of ['apps', 'tokens', 'events'])
      assert.ok(tables.includes(expected), `no ${expected} table among ${tables.join(', ')}`);
    const lines: string[] = [];
    for (const table of tables) {
      const rows = await client.query<{ row: string }>(`SELECT row_to_json(t)::text AS row FROM "${table.replaceAll('"', '""')}" t`);
      for (const { row } of rows.rows) lines.push(`${table}: ${row}`);
    }
    return Buffer.from(lines.join('\n'));
  } finally {
    await client.end();
  }
}

async function postgresBackend(): Promise<Backend> {
  const { databaseUrl, drop } = await createPostgresDatabase();
  return { name: 'PostgreSQL', databaseUrl, snapshot: () => dumpPostgres(databaseUrl), dispose: drop };
}

// ---------------------------------------------------------------------------------------------
// The run

/** What a run leaves behind, for the tests to search. */
interface RunResult {
  exit: { code: number | null; signal: NodeJS.Signals | null };
  stdout: string;
  stderr: string;
  /** The store while the server ran (for SQLite: the WAL still beside the file), and after it stopped. */
  storeWhileRunning: Buffer;
  storeAfterExit: Buffer;
  /** What an operator or an admin reads back: CLI output, events, introspection answers, the app's description. */
  readBack: string[];
  /** Values that must be found nowhere. */
  secrets: Watchlist;
  /** Values the store keeps on purpose: each must be found, or the store search looks at the wrong bytes. */
  storedOnPurpose: Watchlist;
  /** Values the logs show on purpose: each must be found, or the log search looks at the wrong text. */
  loggedOnPurpose: Watchlist;
  /** Every request path logged. */
  loggedPaths: string[];
  /** The event types of app A at the end. */
  eventTypes: string[];
  appA: CreatedApp;
}

const json = (fields: Record<string, unknown>) => JSON.stringify({ grant_type: 'client_credentials', ...fields });
const jsonHeaders = (authorization: string) => ({ authorization, 'content-type': 'application/json' });
const formHeaders = (authorization: string) => ({ authorization, 'content-type': 'application/x-www-form-urlencoded' });
const randomHex = (bytes: number) => randomBytes(bytes).toString('hex');

async function fullRun(backend: Backend, dir: string): Promise<RunResult> {
  const cliOptions = { entry: TESSERA_MAIN, cwd: dir, databaseUrl: backend.databaseUrl };
  const cli = async (args: string[]) => {
    const result = await runCli(children, cliOptions, args);
    assert.equal(result.code, 0, `tessera ${args.join(' ')}: ${result.stderr}`);
    return result.stdout;
  };

  const secrets = new Watchlist();
  const storedOnPurpose = new Watchlist();
  const loggedOnPurpose = new Watchlist();
  const readBack: string[] = [];

  const plantedName = `planted-app-name-${randomHex(8)}`;
  const plantedPath = `planted-path-${randomHex(8)}`;
  const appA = await createAppWithCli(children, cliOptions, `Leak test A ${plantedName}`);
  const appB = await createAppWithCli(children, cliOptions, 'Leak test B');
  secrets.add('the ClientSecret of app A', secretForms(appA.clientSecret));
  secrets.add('the ClientSecret of app B', secretForms(appB.clientSecret));
  storedOnPurpose.add('the name of app A', textForms(plantedName));
  storedOnPurpose.add('the AppKey of app A (public, stored as it is)', textForms(appA.appKey));

  const server: ServerProcess = await startTessera(children, {
    ...cliOptions,
    env: {
      LOG_LEVEL: 'debug',
      LOG_REQUESTS: 'on',
      RATE_LIMITS: 'on',
      RATE_LIMIT_ADMIN_FAILURES_PER_ADDRESS: '20',
      HOUSEKEEPING_INTERVAL_SECONDS: '1',
      FORWARD_AUTH_ADMIN_PATHS: '/admin',
      REDIS_URL: '',
      TRUSTED_PROXIES: '',
    },
  });
  const base = server.baseUrl;
  const urlA = `/api/apps/${appA.appId}`;
  const urlB = `/api/apps/${appB.appId}`;
  loggedOnPurpose.add('a path requested', textForms(plantedPath));
  loggedOnPurpose.add('the AppID of app A', textForms(appA.appId));

  /** Every Authorization header value sent, Basic credentials included. */
  const send = async (path: string, init: RequestInit & { headers?: Record<string, string> } = {}): Promise<JsonResponse> => {
    const authorization = init.headers?.authorization;
    if (authorization !== undefined) {
      const [scheme, value = ''] = authorization.split(' ');
      secrets.add(`an Authorization header (${scheme})`, textForms(value));
      if (scheme === 'Basic') {
        const [user = '', password = ''] = Buffer.from(value, 'base64').toString().split(':');
        // The user part is an AppID or a ClientID (not secret); the password part may be a secret.
        if (user !== appA.appId && user !== appB.appId) secrets.add('the password of client_secret_basic', textForms(password));
      }
    }
    return request(`${base}${path}`, { ...init, signal: AbortSignal.timeout(5_000) });
  };
  let issued = 0;
  const tokenOf = (response: JsonResponse): string => {
    assert.equal(response.status, 200, response.text);
    const token = response.body.access_token as string;
    secrets.add(`access token #${++issued}`, tokenForms(token));
    return token;
  };
  const wrong = (name: string, value: string) => {
    secrets.add(name, secretForms(value));
    return value;
  };
  const issueAdmin = async (app: CreatedApp, clientSecret = app.clientSecret) =>
    tokenOf(
      await send(`/api/apps/${app.appId}/oauth2/token`, {
        method: 'POST',
        headers: jsonHeaders(basic(app.appId)),
        body: json({ client_id: app.clientId, client_secret: clientSecret }),
      }),
    );
  const issueAnonymous = async (app: CreatedApp, extra: Record<string, unknown> = {}) =>
    tokenOf(
      await send(`/api/apps/${app.appId}/oauth2/token`, {
        method: 'POST',
        headers: jsonHeaders(basic(app.appId)),
        body: json({ client_id: app.appId, client_secret: app.appKey, ...extra }),
      }),
    );
  const keepBody = (response: JsonResponse) => {
    readBack.push(response.text);
    return response;
  };

  // --- Tokens, every way they can be asked for.
  let adminA = await issueAdmin(appA);
  await issueAdmin(appB); // a token of the other app, which must not show in anything read back either
  const anonymousA = await issueAnonymous(appA);
  const anonymousB = await issueAnonymous(appB);
  tokenOf(
    await send(`${urlA}/oauth2/token`, {
      method: 'POST',
      headers: formHeaders(basic(appA.clientId, appA.clientSecret)),
      body: 'grant_type=client_credentials',
    }),
  );
  tokenOf(
    await send(`${urlA}/oauth2/token`, {
      method: 'POST',
      headers: { authorization: basic(appA.appId), 'content-type': 'application/vnd.kii.OauthTokenRequest+json' },
      body: json({ client_id: appA.clientId, client_secret: appA.clientSecret, expiresAt: Date.now() + 3_600_000 }),
    }),
  );
  tokenOf(
    await send('/api/oauth2/token', {
      method: 'POST',
      headers: { 'x-kii-appid': appA.appId, 'x-kii-appkey': appA.appKey, 'content-type': 'application/json' },
      body: JSON.stringify({ client_id: appA.clientId, client_secret: appA.clientSecret }),
    }),
  );
  // The secret and a token in the query string too (ignored; query strings are never logged).
  tokenOf(
    await send(`${urlA}/oauth2/token?client_secret=${appA.clientSecret}&access_token=${adminA}`, {
      method: 'POST',
      headers: formHeaders(basic(appA.appId)),
      body: `grant_type=client_credentials&client_id=${appA.clientId}&client_secret=${appA.clientSecret}`,
    }),
  );
  // The ClientSecret sent where the AppKey goes: an anonymous token (the AppKey is not checked yet).
  tokenOf(
    await send(`${urlA}/oauth2/token`, {
      method: 'POST',
      headers: jsonHeaders(basic(appA.appId)),
      body: json({ client_id: appA.appId, client_secret: appA.clientSecret }),
    }),
  );
  const expiring = await issueAnonymous(appA, { expiresAt: Date.now() + 1_000 });

  // --- Using them.
  for (const token of [adminA, anonymousA, expiring]) {
    assert.equal((await send(`${urlA}/whoami`, { headers: { authorization: bearer(token) } })).status, 200);
  }
  const basicPassword = `basic-password-${randomHex(16)}`;
  secrets.add('the password part of Basic AppID:password', textForms(basicPassword));
  assert.equal((await send(`${urlA}/whoami`, { headers: { authorization: basic(appA.appId, basicPassword) } })).status, 200);
  assertError(await send(`${urlA}/whoami?access_token=${adminA}`), 401, 'UNAUTHORIZED');
  assertError(
    await send(`${urlA}/users/me?access_token=${adminA}`, { headers: { authorization: bearer(adminA) } }),
    400,
    'ME_NOT_ALLOWED_FOR_ADMIN',
  );
  assertError(await send(`${urlA}/${plantedPath}`, { headers: { authorization: basic(appA.appId) } }), 404, 'NOT_FOUND');
  assertError(await send(`${urlB}/whoami`, { headers: { authorization: bearer(adminA) } }), 401, 'INVALID_TOKEN');
  const forgedBytes = Buffer.from(adminA, 'base64url');
  forgedBytes[20] = forgedBytes[20]! ^ 0x01; // a bit of the verifier
  const forged = forgedBytes.toString('base64url');
  secrets.add('a forged token', tokenForms(forged));
  assertError(await send(`${urlA}/whoami`, { headers: { authorization: bearer(forged) } }), 401, 'INVALID_TOKEN');

  // --- The app and its configuration (admin).
  keepBody(await send(urlA, { headers: { authorization: bearer(adminA) } }));
  keepBody(await send(`${urlA}/configuration`, { headers: { authorization: bearer(adminA) } }));
  const patch = (body: string, contentType = 'application/json') =>
    send(`${urlA}/configuration`, { method: 'PATCH', headers: { authorization: bearer(adminA), 'content-type': contentType }, body });
  assert.equal(
    keepBody(await patch(JSON.stringify({ adminTokenMaxLifetimeSeconds: 3600, anonymousTokenMaxLifetimeSeconds: 86_400 }))).status,
    200,
  );
  assertError(await patch(JSON.stringify({ adminTokenMaxLifetimeSeconds: anonymousA })), 400, 'invalid_request');
  assertError(await patch(JSON.stringify({ client_secret: appA.clientSecret })), 400, 'invalid_request');
  assert.equal(keepBody(await patch(JSON.stringify({ requireAppKey: true }), 'application/merge-patch+json')).status, 200);

  // --- Wrong AppKeys, now that the app checks them.
  for (const [i, wrongKey] of [randomHex(16), `not-the-app-key-${randomHex(8)}`].entries()) {
    wrong(`wrong AppKey #${i + 1}`, wrongKey);
    assertError(
      await send(`${urlA}/oauth2/token`, {
        method: 'POST',
        headers: jsonHeaders(basic(appA.appId)),
        body: json({ client_id: appA.appId, client_secret: wrongKey }),
      }),
      401,
      'invalid_client',
    );
  }
  await issueAnonymous(appA);

  // --- Token requests refused, each carrying a secret (right or wrong) some way it can be sent:
  // wrong secrets (fewer than the app's failure limit), the ClientSecret from a browser (refused
  // on both paths, recorded as exposed), keys in the wrong fields, and broken requests.
  const tokenPathA = `${urlA}/oauth2/token`;
  const fromPage = { origin: 'https://shop.example.com' };
  const adminBody = (clientSecret: string) => json({ client_id: appA.clientId, client_secret: clientSecret });
  const sdkHeaders = { 'x-kii-appid': appA.appId, 'content-type': 'application/json' };
  const refused: { what: string; path?: string; headers: Record<string, string>; body: string; status: number; code: string }[] = [
    {
      what: 'a wrong secret in JSON',
      headers: jsonHeaders(basic(appA.appId)),
      body: adminBody(wrong('wrong secret in JSON', randomHex(32))),
      status: 401,
      code: 'invalid_client',
    },
    {
      what: 'a wrong secret in client_secret_basic',
      headers: formHeaders(basic(appA.clientId, wrong('wrong secret in client_secret_basic', `wrong-basic-${randomHex(12)}`))),
      body: 'grant_type=client_credentials',
      status: 401,
      code: 'invalid_client',
    },
    {
      what: 'a wrong secret of an unknown ClientID',
      headers: formHeaders(basic(appA.appId)),
      body: `grant_type=client_credentials&client_id=${randomHex(16)}&client_secret=${wrong('wrong secret of an unknown ClientID', randomHex(32))}`,
      status: 401,
      code: 'invalid_client',
    },
    {
      what: 'a wrong secret on the SDK path',
      path: '/api/oauth2/token',
      headers: sdkHeaders,
      body: JSON.stringify({
        client_id: appA.clientId,
        client_secret: wrong('wrong secret on the SDK path', `wrong-sdk-${randomHex(12)}`),
      }),
      status: 401,
      code: 'invalid_client',
    },
    {
      what: 'the ClientSecret from a browser',
      headers: { ...jsonHeaders(basic(appA.appId)), ...fromPage },
      body: adminBody(appA.clientSecret),
      status: 400,
      code: 'unauthorized_client',
    },
    {
      what: 'the ClientSecret from a browser, on the SDK path',
      path: '/api/oauth2/token',
      headers: { ...sdkHeaders, ...fromPage },
      body: adminBody(appA.clientSecret),
      status: 400,
      code: 'unauthorized_client',
    },
    {
      what: 'a wrong secret from a browser',
      headers: { ...jsonHeaders(basic(appA.appId)), ...fromPage },
      body: adminBody(wrong('wrong secret from a browser', randomHex(32))),
      status: 400,
      code: 'unauthorized_client',
    },
    {
      what: 'the AppKey sent as the ClientSecret',
      headers: jsonHeaders(basic(appA.appId)),
      body: adminBody(appA.appKey),
      status: 401,
      code: 'invalid_client',
    },
    {
      what: 'the ClientSecret typed into client_id',
      headers: jsonHeaders(basic(appA.appId)),
      body: json({ client_id: appA.clientSecret, client_secret: appA.clientSecret }),
      status: 401,
      code: 'invalid_client',
    },
    {
      what: 'JSON cut short',
      headers: jsonHeaders(basic(appA.appId)),
      body: `{"client_id":"${appA.clientId}","client_secret":"${appA.clientSecret}"`,
      status: 400,
      code: 'invalid_request',
    },
    {
      what: 'a body of a type not accepted',
      headers: { authorization: basic(appA.appId), 'content-type': 'text/plain' },
      body: `client_secret=${appA.clientSecret}`,
      status: 415,
      code: 'UNSUPPORTED_MEDIA_TYPE',
    },
    {
      what: 'the secret twice in a form',
      headers: formHeaders(basic(appA.appId)),
      body: `grant_type=client_credentials&client_id=${appA.clientId}&client_secret=${appA.clientSecret}&client_secret=${appA.clientSecret}`,
      status: 400,
      code: 'invalid_request',
    },
    {
      what: 'a secret too long',
      headers: jsonHeaders(basic(appA.appId)),
      body: adminBody(`${appA.clientSecret}${'x'.repeat(300)}`),
      status: 400,
      code: 'invalid_request',
    },
    {
      what: 'a body too large',
      headers: jsonHeaders(basic(appA.appId)),
      body: json({ client_id: appA.clientId, client_secret: appA.clientSecret, padding: 'x'.repeat(5000) }),
      status: 413,
      code: 'REQUEST_TOO_LARGE',
    },
  ];
  for (const { what, path = tokenPathA, headers, body, status, code } of refused) {
    const response = await send(path, { method: 'POST', headers, body });
    assert.equal(response.status, status, `${what}: ${response.text}`);
    assertError(response, status, code);
  }

  // --- App B past its failure limit: refused with 429, the right secret too.
  for (let i = 0; i < 22; i++) {
    const attempt = wrong(`wrong secret #${i + 1} against app B`, randomHex(32));
    const response = await send(`${urlB}/oauth2/token`, {
      method: 'POST',
      headers: jsonHeaders(basic(appB.appId)),
      body: json({ client_id: appB.clientId, client_secret: attempt }),
    });
    assert.ok([401, 429].includes(response.status), response.text);
  }
  assertError(
    await send(`${urlB}/oauth2/token`, {
      method: 'POST',
      headers: jsonHeaders(basic(appB.appId)),
      body: json({ client_id: appB.clientId, client_secret: appB.clientSecret }),
    }),
    429,
    'TOO_MANY_REQUESTS',
  );

  // --- Introspection (admin).
  const introspect = (caller: string, body: string, contentType = 'application/json') =>
    send(`${urlA}/oauth2/introspect`, { method: 'POST', headers: { authorization: bearer(caller), 'content-type': contentType }, body });
  const active = keepBody(await introspect(adminA, JSON.stringify({ token: anonymousA })));
  assert.equal(active.body?.active, true, active.text);
  assert.equal(
    keepBody(await introspect(adminA, `token=${adminA}&token_type_hint=access_token`, 'application/x-www-form-urlencoded')).body?.active,
    true,
  );
  assert.equal(keepBody(await introspect(adminA, JSON.stringify({ token: anonymousB }))).body?.active, false);
  assert.equal(keepBody(await introspect(adminA, JSON.stringify({ token: forged }))).body?.active, false);
  assertError(await introspect(anonymousA, JSON.stringify({ token: adminA })), 403, 'ADMIN_REQUIRED');

  // --- Revocation.
  const revoke = (caller: string, body: string, contentType = 'application/json', url = urlA) =>
    send(`${url}/oauth2/revoke`, { method: 'POST', headers: { authorization: bearer(caller), 'content-type': contentType }, body });
  const selfRevoked = await issueAnonymous(appA);
  const adminRevoked = await issueAnonymous(appA);
  assertError(await revoke(anonymousA, JSON.stringify({ token: adminA })), 403, 'ADMIN_REQUIRED');
  assert.equal((await revoke(selfRevoked, JSON.stringify({ token: selfRevoked }))).status, 200);
  assert.equal(
    (await revoke(adminA, `token=${adminRevoked}&token_type_hint=access_token`, 'application/x-www-form-urlencoded')).status,
    200,
  );
  assert.equal((await revoke(adminA, JSON.stringify({ token: anonymousB }))).status, 200); // another app's: nothing happens
  assert.equal((await revoke(adminA, JSON.stringify({ token: forged }))).status, 200);
  assertError(await send(`${urlA}/whoami`, { headers: { authorization: bearer(adminRevoked) } }), 401, 'INVALID_TOKEN');
  assert.equal((await send(`${urlB}/whoami`, { headers: { authorization: bearer(anonymousB) } })).status, 200);

  // --- Expiry, and housekeeping (every second here) removing the expired record.
  await sleep(1_200);
  assertError(await send(`${urlA}/whoami`, { headers: { authorization: bearer(expiring) } }), 401, 'INVALID_TOKEN');

  // --- Forward authentication, as nginx, Traefik and Envoy ask.
  const forward = (path: string, headers: Record<string, string>, method = 'GET') => send(`/api/forward-auth${path}`, { method, headers });
  assert.equal(
    (
      await forward('', {
        authorization: bearer(anonymousA),
        'x-original-uri': `${urlA}/things?access_token=${anonymousA}`,
        'x-original-method': 'GET',
      })
    ).status,
    200,
  );
  assert.equal(
    (await forward('', { authorization: bearer(adminA), 'x-forwarded-uri': `${urlA}/admin/x`, 'x-forwarded-method': 'POST' })).status,
    200,
  );
  assertError(
    await forward('', { authorization: bearer(anonymousA), 'x-forwarded-uri': `${urlA}/admin/x`, 'x-forwarded-method': 'POST' }),
    403,
    'ADMIN_REQUIRED',
  );
  assert.equal((await forward(`${urlA}/things?client_secret=${appA.clientSecret}`, { authorization: basic(appA.appId) })).status, 200);
  assertError(
    await forward('', { authorization: bearer(forged), 'x-original-uri': `${urlA}/things`, 'x-forwarded-for': '203.0.113.9' }),
    401,
    'INVALID_TOKEN',
  );

  // --- A credential: made by the operator, used with a scope and with a wrong secret, rotated,
  // listed and revoked through the API; its secrets must show nowhere either.
  const credential = JSON.parse(
    await cli([
      'credentials',
      'create',
      appA.appId,
      '--name',
      'Leak reader',
      '--scope',
      'events:read',
      '--scope',
      'reports:read',
      '--json',
    ]),
  ) as { clientId: string; clientSecret: string };
  secrets.add("a credential's ClientSecret", secretForms(credential.clientSecret));
  storedOnPurpose.add("the HMAC of a credential's ClientSecret", storedForms(clientSecretDigest(credential.clientSecret)));
  const credentialToken = async (clientSecret: string, scope: string) => {
    for (let attempt = 0; attempt < 10; attempt++) {
      const response = await send(`${urlA}/oauth2/token`, {
        method: 'POST',
        headers: formHeaders(basic(credential.clientId, clientSecret)),
        body: `grant_type=client_credentials&scope=${scope}`,
      });
      if (response.status === 200) return tokenOf(response);
      await sleep(200);
    }
    return assert.fail('the credential never worked');
  };
  const scopedToken = await credentialToken(credential.clientSecret, 'events:read');
  keepBody(await send(`${urlA}/whoami`, { headers: { authorization: bearer(scopedToken) } }));
  assertError(await send(`${urlA}/configuration`, { headers: { authorization: bearer(scopedToken) } }), 403, 'INSUFFICIENT_SCOPE');
  const wrongCredentialSecret = wrong('a wrong secret of a credential', `tessera_${randomHex(24)}`);
  assertError(
    await send(`${urlA}/oauth2/token`, {
      method: 'POST',
      headers: formHeaders(basic(credential.clientId, wrongCredentialSecret)),
      body: 'grant_type=client_credentials',
    }),
    401,
    'invalid_client',
  );
  const rotatedCredential = JSON.parse(
    await cli(['credentials', 'rotate', appA.appId, credential.clientId, '--grace', '60', '--json']),
  ) as {
    clientSecret: string;
  };
  secrets.add("a credential's rotated ClientSecret", secretForms(rotatedCredential.clientSecret));
  storedOnPurpose.add("the HMAC of a credential's rotated ClientSecret", storedForms(clientSecretDigest(rotatedCredential.clientSecret)));
  await credentialToken(rotatedCredential.clientSecret, 'reports:read');
  keepBody(await send(`${urlA}/credentials`, { headers: { authorization: bearer(adminA) } }));
  readBack.push(await cli(['credentials', 'list', appA.appId, '--json']));
  // Another one, made and revoked through the API (its answer shows the secret once, on purpose).
  const made = await send(`${urlA}/credentials`, {
    method: 'POST',
    headers: { authorization: bearer(adminA), 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'Short-lived', scopes: ['tokens:revoke'], allowFrom: ['127.0.0.0/8'] }),
  });
  assert.equal(made.status, 201, made.text);
  secrets.add("a credential's ClientSecret made through the API", secretForms(made.body.clientSecret as string));
  const revoked = await send(`${urlA}/credentials/${made.body.clientId as string}`, {
    method: 'DELETE',
    headers: { authorization: bearer(adminA) },
  });
  assert.equal(keepBody(revoked).status, 200, revoked.text);

  // --- Revoking all: anonymous tokens, then every token (the caller's own included).
  const deleteTokens = (caller: string, query: string) =>
    send(`${urlA}/tokens${query}`, { method: 'DELETE', headers: { authorization: bearer(caller) } });
  assert.equal(keepBody(await deleteTokens(adminA, '?kind=anonymous')).status, 200);
  assertError(await send(`${urlA}/whoami`, { headers: { authorization: bearer(anonymousA) } }), 401, 'INVALID_TOKEN');
  assert.equal(keepBody(await deleteTokens(adminA, '?kind=all')).status, 200);
  assertError(await send(`${urlA}/whoami`, { headers: { authorization: bearer(adminA) } }), 401, 'INVALID_TOKEN');

  // --- The operator: rotate app A's secret (revoking its admin tokens) and app B's tokens; read back.
  adminA = await issueAdmin(appA);
  const rotated = JSON.parse(await cli(['apps', 'rotate-secret', appA.appId, '--revoke-admin-tokens', '--json'])) as {
    clientSecret: string;
  };
  secrets.add('the rotated ClientSecret of app A', secretForms(rotated.clientSecret));
  const newSecretWorks = async () => {
    for (let attempt = 0; attempt < 10; attempt++) {
      const response = await send(`${urlA}/oauth2/token`, {
        method: 'POST',
        headers: jsonHeaders(basic(appA.appId)),
        body: json({ client_id: appA.clientId, client_secret: rotated.clientSecret }),
      });
      if (response.status === 200) return tokenOf(response);
      await sleep(200);
    }
    assert.fail('the rotated secret never worked');
  };
  const adminAfterRotation = await newSecretWorks();
  assertError(await send(`${urlA}/whoami`, { headers: { authorization: bearer(adminA) } }), 401, 'INVALID_TOKEN');
  assertError(
    await send(`${urlA}/oauth2/token`, {
      method: 'POST',
      headers: jsonHeaders(basic(appA.appId)),
      body: json({ client_id: appA.clientId, client_secret: appA.clientSecret }),
    }),
    401,
    'invalid_client',
  );
  readBack.push(await cli(['tokens', 'revoke-all', appB.appId, '--kind', 'all', '--json']));
  readBack.push(await cli(['events', appA.appId, '--limit', '500', '--json']));
  readBack.push(await cli(['events', appB.appId, '--limit', '500']));
  readBack.push(await cli(['apps', 'show', appA.appId, '--json']));
  readBack.push(await cli(['apps', 'list', '--json']));

  // --- The last admin token stays valid: the store must hold its selector and verifier digest.
  // (Anonymous tokens are self-verifying: nothing of them is stored, unless one is revoked alone.)
  for (const [name, token] of [['the last admin token', adminAfterRotation]] as const) {
    const bytes = Buffer.from(token, 'base64url');
    storedOnPurpose.add(`the selector of ${name}`, storedForms(bytes.subarray(0, 16)));
    storedOnPurpose.add(`the verifier digest of ${name}`, storedForms(createHash('sha256').update(bytes.subarray(16)).digest()));
  }
  storedOnPurpose.add('the HMAC of the rotated ClientSecret of app A', storedForms(clientSecretDigest(rotated.clientSecret)));

  // --- The audit log, as the admin reads it (a page, a type, the next page).
  const events = (query: string) => send(`${urlA}/events${query}`, { headers: { authorization: bearer(adminAfterRotation) } });
  const all = keepBody(await events('?limit=500'));
  assert.equal(all.status, 200, all.text);
  keepBody(await events('?type=token.refused'));
  const firstPage = keepBody(await events('?limit=3'));
  keepBody(await events(`?limit=3&cursor=${firstPage.body.nextCursor as string}`));
  const eventTypes = [...new Set((all.body.events as { type: string }[]).map((event) => event.type))].sort();

  await sleep(300); // the events of the last requests are written after their answers
  const storeWhileRunning = await backend.snapshot();
  const exit = await terminate(server);
  const storeAfterExit = await backend.snapshot();
  const stdout = server.stdout();
  const loggedPaths = stdout
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => {
      try {
        return (JSON.parse(line) as { req?: { path?: string } }).req?.path;
      } catch {
        assert.fail(`a log line is not JSON: ${line}`);
      }
    })
    .filter((path): path is string => path !== undefined);
  return {
    exit,
    stdout,
    stderr: server.stderr(),
    storeWhileRunning,
    storeAfterExit,
    readBack,
    secrets,
    storedOnPurpose,
    loggedOnPurpose,
    loggedPaths,
    eventTypes,
    appA,
  };
}

// ---------------------------------------------------------------------------------------------
// The tests

describe('the leak scanner', () => {
  const noise = () => randomBytes(4096);
  const cases: [string, Forms, Buffer][] = [];
  const secret = randomHex(32);
  const token = randomBytes(32).toString('base64url');
  for (const [i, form] of secretForms(secret).entries()) cases.push([`ClientSecret form #${i + 1}`, secretForms(secret), form]);
  for (const [i, form] of tokenForms(token).entries()) cases.push([`token form #${i + 1}`, tokenForms(token), form]);

  it('keeps every form of a value added twice under different names', () => {
    const list = new Watchlist();
    list.add('a header', textForms(token));
    list.add('a token', tokenForms(token));
    assert.deepEqual(list.names(), ['a header']);
    assert.deepEqual(list.foundIn(Buffer.concat([noise(), Buffer.from(token, 'base64url').subarray(16), noise()])), ['a header']);
  });

  for (const [name, forms, planted] of cases) {
    it(`finds a planted ${name} among random bytes, and nothing in the random bytes alone`, () => {
      const list = new Watchlist();
      list.add('planted', forms);
      assert.deepEqual(list.foundIn(Buffer.concat([noise(), planted, noise()])), ['planted']);
      assert.deepEqual(list.foundIn(noise()), []);
    });
  }
});

const BACKENDS: { name: Backend['name']; open: (dir: string) => Promise<Backend> }[] = [
  { name: 'SQLite', open: async (dir) => sqliteBackend(dir) },
  { name: 'PostgreSQL', open: () => postgresBackend() },
];

for (const { name, open } of BACKENDS) {
  describe(`a full run on ${name} leaves no secret in the store, the logs or what is read back`, () => {
    let dir: string;
    let backend: Backend | undefined;
    let run: RunResult;

    before(async () => {
      dir = mkdtempSync(join(tmpdir(), 'tessera-leaks-'));
      backend = await open(dir);
      run = await fullRun(backend, dir);
    });

    after(async () => {
      await children.killAll();
      await backend?.dispose();
      if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    });

    it('stops with code 0 on SIGTERM', () => {
      assert.deepEqual(run.exit, { code: 0, signal: null }, `stderr:\n${run.stderr.slice(-2000)}`);
    });

    it('went through every endpoint and recorded every kind of event', () => {
      const appPath = `/api/apps/${run.appA.appId}`;
      for (const path of [
        '/oauth2/token',
        '/whoami',
        '',
        '/configuration',
        '/oauth2/introspect',
        '/oauth2/revoke',
        '/tokens',
        '/events',
        '/credentials',
      ]) {
        assert.ok(run.loggedPaths.includes(`${appPath}${path}`), `no request to ${appPath}${path} in the logs`);
      }
      assert.ok(run.loggedPaths.includes('/api/oauth2/token'), 'no SDK token request in the logs');
      assert.ok(run.loggedPaths.includes('/api/forward-auth'), 'no forward-auth request in the logs');
      assert.ok(run.loggedPaths.includes(`/api/forward-auth${appPath}/things`), 'no Envoy-style forward-auth request in the logs');
      assert.deepEqual(run.eventTypes, [
        'app.configuration_changed',
        'app.secret_exposed',
        'app.secret_rotated',
        'credential.created',
        'credential.revoked',
        'credential.rotated',
        'token.issued',
        'token.refused',
        'token.revoked',
      ]);
    });

    it('had many values to look for', () => {
      assert.ok(run.secrets.size >= 50, `only ${run.secrets.size}: ${run.secrets.names().join(', ')}`);
    });

    it('logs nothing secret on stdout or stderr (and the search sees what is logged)', () => {
      assert.deepEqual(
        run.loggedOnPurpose.foundIn(Buffer.from(run.stdout)).sort(),
        run.loggedOnPurpose.names().sort(),
        'the logs lack what they must show',
      );
      assert.deepEqual(run.secrets.foundIn(Buffer.from(run.stdout)), [], 'found on stdout');
      assert.deepEqual(run.secrets.foundIn(Buffer.from(run.stderr)), [], 'found on stderr');
    });

    it('stores nothing secret, while running and after stopping (and the search sees what is stored)', () => {
      for (const [when, bytes] of [
        ['while running', run.storeWhileRunning],
        ['after exit', run.storeAfterExit],
      ] as const) {
        assert.deepEqual(
          run.storedOnPurpose.foundIn(bytes).sort(),
          run.storedOnPurpose.names().sort(),
          `the store ${when} lacks what it must hold`,
        );
        assert.deepEqual(run.secrets.foundIn(bytes), [], `found in the store ${when}`);
      }
    });

    it('shows nothing secret to the operator (CLI) or the admin (app, configuration, introspection, events)', () => {
      const text = Buffer.from(run.readBack.join('\n'));
      assert.ok(text.includes(run.appA.appId) && text.includes('token.refused'), 'the read-back output is not what was expected');
      assert.deepEqual(run.secrets.foundIn(text), [], 'found in what was read back');
    });
  });
}
