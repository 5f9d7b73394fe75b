import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { decodeProtectedHeader } from 'jose';
import {
  adminTokenRequest,
  childrenOfFile,
  createAppWithCli,
  runCli,
  startTessera,
  tokenRequest,
  whoami,
  type CliResult,
  type CreatedApp,
} from '../helpers/fleet.js';
import { REPO_ROOT, TESSERA_BIN, type ServerProcess } from '../helpers/process.js';
import { createTestStore, type TestStore } from '../helpers/store.js';

// `tessera keys list|rotate|retire --jwt` and `tessera credentials create --format jwt` as an
// operator runs them: the real CLI beside a real server, on the store TEST_STORE names, both with
// the same KEY_ENCRYPTION_KEY.

const children = childrenOfFile();
const KEY_ENCRYPTION_KEY = Buffer.alloc(32, 3).toString('base64');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface JwtKey {
  kid: string;
  algorithm: string;
  state: string;
}

describe(`tessera keys --jwt, as real processes (${process.env.TEST_STORE ?? 'sqlite'})`, () => {
  let testStore: TestStore;
  let server: ServerProcess;
  let app: CreatedApp;

  const options = () => ({ entry: TESSERA_BIN, cwd: REPO_ROOT, databaseUrl: testStore.databaseUrl, env: { KEY_ENCRYPTION_KEY } });
  const cli = (args: string[]): Promise<CliResult> => runCli(children, options(), args);
  const json = (result: CliResult) => {
    assert.equal(result.code, 0, result.stderr);
    return JSON.parse(result.stdout);
  };
  /** The `kid` of a new admin token of the app, once the server signs with `kid` (within a second of a change). */
  const signsWith = async (kid: string, afterMs = 0) => {
    const deadline = performance.now() + afterMs + 1_500;
    for (;;) {
      const token = (await adminTokenRequest(server.baseUrl, app)).body.access_token as string;
      if (decodeProtectedHeader(token).kid === kid) return token;
      assert.ok(performance.now() < deadline, `the server does not sign with ${kid}`);
      await sleep(50);
    }
  };

  before(async () => {
    testStore = await createTestStore();
    server = await startTessera(children, options());
    app = await createAppWithCli(children, options(), 'CLI JWT keys');
    assert.equal((await cli(['apps', 'configure', app.appId, 'accessTokenFormat=jwt'])).code, 0);
  });
  after(async () => {
    await children.killAll();
    await testStore?.dispose();
  });

  it('list --jwt says when there is no key yet; the first rotation signs at once, whatever --ahead says', async () => {
    const fresh = await createTestStore();
    try {
      const local = (args: string[]) => runCli(children, { ...options(), databaseUrl: fresh.databaseUrl }, args);
      const empty = await local(['keys', 'list', '--jwt']);
      assert.equal(empty.code, 0, empty.stderr);
      assert.match(empty.stdout, /^No JWT key yet/);
      const first = json(await local(['keys', 'rotate', '--jwt', '--ahead', '3600', '--json'])) as JwtKey[];
      assert.deepEqual(
        first.map((key) => key.state),
        ['signing'],
      );
    } finally {
      await fresh.dispose();
    }
  });

  it('rotate --jwt publishes a key ahead, list shows it pending, and the server signs with it once its time comes', async () => {
    const first = (await adminTokenRequest(server.baseUrl, app)).body.access_token as string;
    const firstKid = decodeProtectedHeader(first).kid!;
    const rotated = json(await cli(['keys', 'rotate', '--jwt', '--ahead', '2', '--json'])) as JwtKey[];
    const pending = rotated.find((key) => key.state === 'pending')!;
    assert.ok(pending, JSON.stringify(rotated));
    assert.deepEqual(
      (json(await cli(['keys', 'list', '--jwt', '--json'])) as JwtKey[]).map((key) => [key.kid, key.state]).sort(),
      [
        [firstKid, 'signing'],
        [pending.kid, 'pending'],
      ].sort(),
    );
    const jwks = (await (await fetch(`${server.baseUrl}/api/jwks.json`)).json()) as { keys: { kid: string }[] };
    assert.ok(
      jwks.keys.some((key) => key.kid === pending.kid),
      'published before it signs',
    );
    await signsWith(pending.kid, 2_000);
    assert.equal((await whoami(server.baseUrl, app.appId, first)).status, 200, "the old key's token still works");
    const text = await cli(['keys', 'list', '--jwt']);
    assert.match(text.stdout, new RegExp(`${pending.kid}\\s+EdDSA\\s+signing`));
  });

  it('rotate --jwt --algorithm ES256 --ahead 0 signs at once; retire --jwt ends a key and its tokens', async () => {
    const before = (await adminTokenRequest(server.baseUrl, app)).body.access_token as string;
    const oldKid = decodeProtectedHeader(before).kid!;
    const rotated = json(await cli(['keys', 'rotate', '--jwt', '--algorithm', 'ES256', '--ahead', '0', '--json'])) as JwtKey[];
    const signing = rotated.find((key) => key.state === 'signing')!;
    assert.equal(signing.algorithm, 'ES256');
    assert.equal(decodeProtectedHeader(await signsWith(signing.kid)).alg, 'ES256');
    const refused = await cli(['keys', 'retire', '--jwt', signing.kid]);
    assert.equal(refused.code, 1, 'the signing key cannot be retired');
    assert.match(refused.stderr, /signs new tokens; rotate first/);
    assert.equal((await cli(['keys', 'retire', '--jwt', oldKid])).code, 0);
    const deadline = performance.now() + 1_000;
    while ((await whoami(server.baseUrl, app.appId, before)).status !== 401) {
      assert.ok(performance.now() < deadline, "a retired key's token still works after a second");
      await sleep(50);
    }
  });

  it('refuses wrong usage with exit 2, without changing any key', async () => {
    const keys = json(await cli(['keys', 'list', '--jwt', '--json'])) as JwtKey[];
    for (const args of [
      ['keys', 'rotate', '--jwt', '--algorithm', 'RS256'],
      ['keys', 'rotate', '--jwt', '--ahead', '-5'],
      ['keys', 'rotate', '--ahead', '5'],
      ['keys', 'list', '--jwt', '--algorithm', 'ES256'],
      ['keys', 'retire', '--jwt'],
    ]) {
      assert.equal((await cli(args)).code, 2, args.join(' '));
    }
    assert.deepEqual(json(await cli(['keys', 'list', '--jwt', '--json'])), keys);
  });

  it('credentials create --format jwt gives JWTs in an app of opaque tokens', async () => {
    const opaque = await createAppWithCli(children, options(), 'CLI opaque app');
    const created = json(
      await cli(['credentials', 'create', opaque.appId, '--name', 'Partner', '--scope', 'events:read', '--format', 'jwt', '--json']),
    ) as { clientId: string; clientSecret: string; accessTokenFormat: string };
    assert.equal(created.accessTokenFormat, 'jwt');
    const issued = await tokenRequest(server.baseUrl, opaque.appId, created.clientId, created.clientSecret);
    assert.equal(issued.status, 200, issued.text);
    assert.equal(decodeProtectedHeader(issued.body.access_token as string).typ, 'at+jwt');
    assert.equal((await adminTokenRequest(server.baseUrl, opaque)).body.access_token.length, 43, "the app's own stay opaque");
    const wrong = await cli(['credentials', 'create', opaque.appId, '--name', 'Bad', '--scope', 'events:read', '--format', 'paseto']);
    assert.equal(wrong.code, 1);
    assert.match(wrong.stderr, /accessTokenFormat must be one of/);
  });
});
