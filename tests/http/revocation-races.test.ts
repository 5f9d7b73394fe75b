import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import type { AppConfiguration } from 'tessera-tokens/internal/apps/app.js';
import type { CreatedCredential } from '../../src/apps/credential-service.js';
import { OPERATOR } from '../../src/request-context.js';
import { openStore } from '../../src/store/open.js';
import { openSqliteStore } from '../../src/store/sqlite/store.js';
import { createConfiguredApp } from '../helpers/configured-app.js';
import { isSet, statusListAt, statusReferenceOf } from '../helpers/jwt.js';
import { adminTokenOf, basic, bearer, formBody, request, requestAs, whoami, type AppEndpoint } from '../helpers/http.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { createSqliteTestStore, type TestStore } from '../helpers/store.js';
import { forSuite } from '../helpers/suite.js';

// A revocation wins every race with issuance (issue 36, findings 1 and 2): token requests that
// authenticated against an app read before the revocation (another instance's cache before its change
// signal, or this instance's with the token's insert queued) must not leave a token behind. Two
// instances over one store (the runner runs this file on SQLite and on PostgreSQL) are sent a steady
// stream of token requests with the secret being revoked, and the revocation lands in its middle;
// after its answer, every token the stream got is refused on both instances, at once.

/**
 * On SQLite, both instances checkpoint on a thread, as `tessera serve` does, and every 4 pages, so
 * that the races run across checkpoints: the writes wait for each one, the token checks do not.
 */
const onSqlite = (process.env.TEST_STORE ?? 'sqlite') === 'sqlite';
const checkpointWarnings: string[] = [];
const checkpointsOffThread = { onWarning: (message: string) => void checkpointWarnings.push(message), pages: 4 };

let firstStore: TestStore | undefined;
const server = forSuite(async () => {
  if (!onSqlite) return startServer();
  firstStore = await createSqliteTestStore({ checkpointsOffThread });
  return startServer({ testStore: firstStore });
});
after(() => firstStore?.dispose());

/** A second instance over the same store, with a connection (pool) of its own. */
let second: TestServer | undefined;
async function otherInstance(): Promise<TestServer> {
  if (second !== undefined) return second;
  const { databaseUrl } = server.testStore;
  const store = onSqlite
    ? openSqliteStore(databaseUrl.slice('sqlite:'.length), { changePollIntervalMs: 100, checkpointsOffThread })
    : await openStore(databaseUrl);
  second = await startServer({ testStore: { store, databaseUrl, dispose: () => store.close() } });
  return second;
}
after(async () => {
  await second?.close();
  await second?.testStore.dispose();
});

type App = AppEndpoint & { adminId: string };

/** Concurrent loops of token requests, each sent to the two instances in turn. */
const LOOPS = 12;
/** How long the requests run before the revocation is sent, and after its answer. */
const BEFORE_MS = 150;
const AFTER_MS = 400;

interface Stream {
  /** Every token the stream was given, with when its answer arrived (performance.now()). */
  tokens: { token: string; at: number }[];
  statuses: Map<number, number>;
  stop(): Promise<void>;
}

/** `LOOPS` loops asking both instances for tokens with `clientId` and `clientSecret` until stopped. */
function tokenStream(urls: readonly string[], clientId: string, clientSecret: string): Stream {
  const tokens: Stream['tokens'] = [];
  const statuses = new Map<number, number>();
  let running = true;
  const loop = async (index: number) => {
    for (let n = index; running; n++) {
      const response = await request(`${urls[n % urls.length]}/oauth2/token`, {
        method: 'POST',
        headers: { authorization: basic(clientId, clientSecret), 'content-type': 'application/x-www-form-urlencoded' },
        body: formBody({ grant_type: 'client_credentials' }),
      });
      statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
      if (response.status === 200) tokens.push({ token: response.body.access_token as string, at: performance.now() });
    }
  };
  const loops = Array.from({ length: LOOPS }, (_, index) => loop(index));
  return {
    tokens,
    statuses,
    async stop() {
      running = false;
      await Promise.all(loops);
    },
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The JWTs of `tokens` whose bit is not set in their status list, as a verifier reads it after the
 * list's rebuild (an instance builds a list at most once a second).
 */
async function notRevokedInStatusLists(tokens: readonly string[]): Promise<string[]> {
  await sleep(1_100);
  const lists = new Map<string, Buffer>();
  const missed: string[] = [];
  for (const token of tokens) {
    const { idx, uri } = statusReferenceOf(token);
    let bits = lists.get(uri);
    if (bits === undefined) {
      bits = (await statusListAt(uri)).bits;
      lists.set(uri, bits);
    }
    if (!isSet(bits, idx)) missed.push(`${token.slice(-8)} (index ${idx} of ${uri})`);
  }
  return missed;
}

/** The tokens of `tokens` that either instance still takes (whoami 200), with where. */
async function stillWorking(app: App, other: TestServer, tokens: readonly string[]): Promise<string[]> {
  const working: string[] = [];
  const elsewhere = app.appUrl.replace(server.baseUrl, other.baseUrl);
  for (const token of tokens) {
    for (const url of [app.appUrl, elsewhere]) {
      const status = (await whoami(url, bearer(token))).status;
      if (status !== 401) working.push(`${token.slice(0, 8)}… ${status} at ${url === app.appUrl ? 'the revoking instance' : 'the other'}`);
    }
  }
  return working;
}

async function newApp(configuration: Partial<AppConfiguration> = {}): Promise<{ app: App; other: TestServer; urls: string[] }> {
  const other = await otherInstance();
  const app = await createConfiguredApp(server, configuration, 'Races');
  return { app, other, urls: [app.appUrl, app.appUrl.replace(server.baseUrl, other.baseUrl)] };
}

describe('a revocation wins every race with issuance, on two instances', () => {
  it('revoking a credential while its secret keeps asking for tokens: no token of it works after the answer', async () => {
    const { app, other, urls } = await newApp();
    const credential: CreatedCredential = await server.tessera.credentials.create(
      app.appId,
      { name: 'Leaked', scopes: ['events:read', 'credentials:manage'] },
      OPERATOR,
    );
    const admin = await adminTokenOf(app);
    const stream = tokenStream(urls, credential.clientId, credential.clientSecret);
    await sleep(BEFORE_MS);
    const revoked = await requestAs(`${app.appUrl}/credentials/${credential.clientId}`, bearer(admin), 'DELETE');
    assert.equal(revoked.status, 200, revoked.text);
    await sleep(AFTER_MS);
    await stream.stop();

    assert.ok(stream.tokens.length > 0, 'the stream got tokens before the revocation');
    const working = await stillWorking(
      app,
      other,
      stream.tokens.map(({ token }) => token),
    );
    assert.deepEqual(working, [], `${working.length} of ${stream.tokens.length} tokens outlived the revocation`);
    assert.deepEqual((await requestAs(`${app.appUrl}/credentials`, bearer(admin))).body, { credentials: [] });
  });

  it('rotating the ClientSecret with --revoke-admin-tokens while the old secret keeps asking: no full admin token survives', async () => {
    const { app, other, urls } = await newApp();
    const stream = tokenStream(urls, app.clientId, app.clientSecret);
    await sleep(BEFORE_MS);
    const rotation = await server.tessera.apps.rotateSecret(app.appId, { revokeAdminTokens: true }, OPERATOR);
    assert.ok(rotation.clientSecret !== app.clientSecret);
    await sleep(AFTER_MS);
    await stream.stop();

    assert.ok(stream.tokens.length > 0, 'the stream got tokens before the rotation');
    const working = await stillWorking(
      app,
      other,
      stream.tokens.map(({ token }) => token),
    );
    assert.deepEqual(working, [], `${working.length} of ${stream.tokens.length} tokens outlived the rotation`);
  });

  it('revoking every admin token while tokens are being issued: every token answered before the revocation was sent is refused', async () => {
    const { app, other, urls } = await newApp();
    const admin = await adminTokenOf(app);
    const stream = tokenStream(urls, app.clientId, app.clientSecret);
    await sleep(BEFORE_MS);
    const sent = performance.now();
    const revoked = await requestAs(`${app.appUrl}/tokens?kind=admin`, bearer(admin), 'DELETE');
    assert.equal(revoked.status, 200, revoked.text);
    await sleep(AFTER_MS);
    await stream.stop();

    const before = stream.tokens.filter(({ at }) => at < sent).map(({ token }) => token);
    assert.ok(before.length > 0, 'the stream got tokens before the revocation');
    const working = await stillWorking(app, other, [admin, ...before]);
    assert.deepEqual(working, [], `${working.length} of ${before.length + 1} tokens outlived the revocation`);
    assert.equal((await whoami(app.appUrl, bearer(stream.tokens.at(-1)!.token))).status, 200, 'a token issued after it works');
  });

  describe('with JWT access tokens: refused on both instances after the answer, and their bits set in the status lists', () => {
    it('revoking a credential while its secret keeps asking for tokens', async () => {
      const { app, other, urls } = await newApp({ accessTokenFormat: 'jwt' });
      const credential = await server.tessera.credentials.create(app.appId, { name: 'Leaked', scopes: ['events:read'] }, OPERATOR);
      const admin = await adminTokenOf(app);
      const stream = tokenStream(urls, credential.clientId, credential.clientSecret);
      await sleep(BEFORE_MS);
      const revoked = await requestAs(`${app.appUrl}/credentials/${credential.clientId}`, bearer(admin), 'DELETE');
      assert.equal(revoked.status, 200, revoked.text);
      await sleep(AFTER_MS);
      await stream.stop();

      const tokens = stream.tokens.map(({ token }) => token);
      assert.ok(tokens.length > 0 && tokens.every((token) => token.split('.').length === 3), 'the stream got JWTs before the revocation');
      assert.deepEqual(await stillWorking(app, other, tokens), []);
      assert.deepEqual(await notRevokedInStatusLists(tokens), []);
    });

    it('revoking every token of the app while admin and anonymous tokens are being issued', async () => {
      const { app, other, urls } = await newApp({ accessTokenFormat: 'jwt' });
      const admin = await adminTokenOf(app);
      const admins = tokenStream(urls, app.clientId, app.clientSecret);
      const anonymous = tokenStream(urls, app.appId, app.appKey);
      await sleep(BEFORE_MS);
      const sent = performance.now();
      const revoked = await requestAs(`${app.appUrl}/tokens?kind=all`, bearer(admin), 'DELETE');
      assert.equal(revoked.status, 200, revoked.text);
      await sleep(AFTER_MS);
      await Promise.all([admins.stop(), anonymous.stop()]);

      const before = [...admins.tokens, ...anonymous.tokens].filter(({ at }) => at < sent).map(({ token }) => token);
      assert.ok(before.length > 0, 'the streams got tokens before the revocation');
      assert.deepEqual(await stillWorking(app, other, [admin, ...before]), []);
      assert.deepEqual(await notRevokedInStatusLists([admin, ...before]), []);
      const after = anonymous.tokens.at(-1)!.token;
      assert.equal((await whoami(app.appUrl, bearer(after))).status, 200, 'a token issued after it works');
    });
  });

  it('ran the races across checkpoints on SQLite, none of which failed', () => {
    assert.deepEqual(checkpointWarnings, []);
  });
});
