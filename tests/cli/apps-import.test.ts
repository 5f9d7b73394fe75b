import assert from 'node:assert/strict';
import { DEFAULT_APP_CONFIGURATION } from 'tessera-tokens/internal/apps/app.js';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import kiiSdk from 'kii-cloud-sdk';
import { MAX_LISTED_PROBLEMS } from '../../src/apps/import.js';
import { clientSecretDigest } from 'tessera-tokens/internal/crypto.js';
import { OPERATOR } from '../../src/request-context.js';
import { createTessera, type Tessera } from '../../src/tessera.js';
import { errorProblems } from '../helpers/assert.js';
import {
  adminTokenRequest,
  anonymousTokenRequest,
  childrenOfFile,
  runCli,
  sleep,
  startTessera,
  whoami,
  type CliResult,
} from '../helpers/fleet.js';
import { REPO_ROOT, TESSERA_BIN, type ServerProcess } from '../helpers/process.js';
import { createTestStore, type TestStore } from '../helpers/store.js';

// `tessera apps import` and `apps export` as an operator runs them: the real CLI as a process, on the
// store TEST_STORE names (a SQLite file or a PostgreSQL database of this file's own), beside a real
// server that learns of the imported apps by the store's change signal. The imported keys are then
// used as deployed clients use them: the token endpoint for both kinds of token, Basic with the
// AppID, and the deployed SDK.

const children = childrenOfFile();

/** Keys in the established service's format: an 8-character AppID. */
function establishedKeys() {
  return { appId: hex(4), appKey: hex(16), clientId: hex(16), clientSecret: hex(32) };
}

/** Keys in Tessera's own format: a 16-character AppID. */
function tesseraKeys() {
  return { appId: hex(8), appKey: hex(16), clientId: hex(16), clientSecret: hex(32) };
}

function hex(bytes: number): string {
  return randomBytes(bytes).toString('hex');
}

type Line = Record<string, unknown>;

function jsonLines(lines: readonly (Line | string)[]): string {
  return lines.map((line) => (typeof line === 'string' ? line : JSON.stringify(line))).join('\n');
}

function parseJson(text: string, what: string): any {
  try {
    return JSON.parse(text);
  } catch {
    return assert.fail(`${what} is not one JSON document: ${JSON.stringify(text)}`);
  }
}

describe(`tessera apps import and export, as real processes (${process.env.TEST_STORE ?? 'sqlite'})`, () => {
  let testStore: TestStore;
  /** The domain services over the same store, for what the test reads and sets up directly. */
  let tessera: Tessera;
  let server: ServerProcess;
  let dir: string;
  const ownerEmail = `owner-${hex(4)}@example.com`;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tessera-import-test-'));
    testStore = await createTestStore();
    tessera = createTessera({ store: testStore.store });
    [server] = await Promise.all([
      startTessera(children, { entry: TESSERA_BIN, cwd: REPO_ROOT, databaseUrl: testStore.databaseUrl }),
      tessera.developers.create(ownerEmail, null, OPERATOR),
    ]);
  });
  after(async () => {
    await children.killAll();
    await testStore?.dispose();
    rmSync(dir, { recursive: true, force: true });
  });

  const cli = (args: string[]): Promise<CliResult> =>
    runCli(children, { entry: TESSERA_BIN, cwd: REPO_ROOT, databaseUrl: testStore.databaseUrl }, args);

  let files = 0;
  const fileOf = (text: string) => {
    const path = join(dir, `apps-${++files}.jsonl`);
    writeFileSync(path, text);
    return path;
  };

  const appCount = () => tessera.store.apps.count();

  it('imports apps with their keys, in either format; a server that was asked for one before learns of it; every token kind works', async () => {
    const established = { name: 'Established one', ...establishedKeys() };
    const owned = {
      name: 'Established, owned and configured',
      ...establishedKeys(),
      owner: ownerEmail.toUpperCase(),
      configuration: { adminTokenMaxLifetimeSeconds: 3600, requireAppKey: true, allowedOrigins: ['https://app.example.com'] },
    };
    const own = { name: 'Tessera-made', ...tesseraKeys(), configuration: {} };
    // Asked for before it exists: unknown to the running server.
    const before = await whoami(server.baseUrl, established.appId, undefined);
    assert.deepEqual(errorProblems(before, 404, 'APP_NOT_FOUND'), []);
    const countBefore = await appCount();

    // A blank line, a CRLF line end and a byte order mark are all forgiven.
    const text = `\uFEFF${JSON.stringify(established)}\r\n\n${JSON.stringify(owned)}\n${JSON.stringify(own)}\n`;
    const result = await cli(['apps', 'import', fileOf(text)]);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /Imported 3 app\(s\)/);
    assert.equal(await appCount(), countBefore + 3);

    // The server learns of it through the store's change signal (SQLite's poller, PostgreSQL's NOTIFY).
    const started = Date.now();
    let basic = await whoami(server.baseUrl, established.appId, undefined);
    while (basic.status !== 200 && Date.now() - started < 2_000) {
      await sleep(50);
      basic = await whoami(server.baseUrl, established.appId, undefined);
    }
    assert.equal(basic.status, 200, `Basic with the imported AppID, ${Date.now() - started} ms after the import: ${basic.text}`);

    for (const app of [established, owned, own]) {
      const stored = await tessera.store.apps.findById(app.appId);
      assert.ok(stored, app.appId);
      assert.equal(stored.name, app.name);
      assert.equal(stored.appKey, app.appKey);
      assert.equal(stored.clientId, app.clientId);
      // Only the digest is kept, as for a created app.
      assert.deepEqual(stored.clientSecretHash, clientSecretDigest(app.clientSecret));
      assert.match(stored.adminId, /^[0-9a-f-]{36}$/);

      const admin = await adminTokenRequest(server.baseUrl, app);
      assert.equal(admin.status, 200, `${app.name}: admin token: ${admin.text}`);
      assert.equal(admin.body.id, stored.adminId);
      const asAdmin = await whoami(server.baseUrl, app.appId, admin.body.access_token);
      assert.equal(asAdmin.status, 200, asAdmin.text);
      assert.equal(asAdmin.body.principal, 'admin');

      const anonymous = await anonymousTokenRequest(server.baseUrl, app);
      assert.equal(anonymous.status, 200, `${app.name}: anonymous token: ${anonymous.text}`);
      const asAnonymous = await whoami(server.baseUrl, app.appId, anonymous.body.access_token);
      assert.equal(asAnonymous.status, 200, asAnonymous.text);
      assert.equal(asAnonymous.body.principal, 'anonymous');

      const basicAuth = await whoami(server.baseUrl, app.appId, undefined);
      assert.equal(basicAuth.status, 200, basicAuth.text);
      assert.equal(basicAuth.body.appId, app.appId);

      // The deployed SDK, initialised with the imported AppID and AppKey, as a mobile app ships them.
      const sdk = kiiSdk.create();
      sdk.Kii.initializeWithSite(app.appId, app.appKey, `${server.baseUrl}/api`);
      const context = await sdk.Kii.authenticateAsAppAdmin(app.clientId, app.clientSecret);
      assert.equal(context._getId(), stored.adminId);
      assert.equal((await whoami(server.baseUrl, app.appId, context.getAccessToken())).status, 200);
    }
    const adminIds = await Promise.all(
      [established, owned, own].map(async (app) => (await tessera.store.apps.findById(app.appId))!.adminId),
    );
    assert.equal(new Set(adminIds).size, 3, 'each app gets an admin id of its own');

    // The configuration and the owner, as `apps show` reads them.
    const shown = await cli(['apps', 'show', owned.appId, '--json']);
    assert.equal(shown.code, 0, shown.stderr);
    const app = parseJson(shown.stdout, 'apps show --json');
    assert.deepEqual(app.configuration, {
      ...DEFAULT_APP_CONFIGURATION,
      adminTokenMaxLifetimeSeconds: 3600,
      anonymousTokenMaxLifetimeSeconds: null,
      requireAppKey: true,
      allowedOrigins: ['https://app.example.com'],
    });
    assert.deepEqual(app.members, [{ email: ownerEmail, role: 'owner' }]);
    // Recorded as for an app created with an owner.
    const { events } = await tessera.events.list(owned.appId, { type: 'app.owner_changed', limit: 10 });
    assert.deepEqual(
      events.map((event) => [event.type, event.principal, event.details.previousOwnerId]),
      [['app.owner_changed', 'operator', null]],
    );
  });

  it('--json prints one object with the counts', async () => {
    const lines = [{ name: 'Json one', ...establishedKeys() }, '', { name: 'Json two', ...tesseraKeys() }];
    const result = await cli(['apps', 'import', fileOf(jsonLines(lines)), '--json']);
    assert.equal(result.code, 0, result.stderr);
    assert.deepEqual(parseJson(result.stdout, 'apps import --json'), {
      imported: 2,
      skipped: 0,
      dryRun: false,
      lines: 3,
      blankLines: 1,
      owned: 0,
      establishedFormat: 1,
      tesseraFormat: 1,
    });
  });

  it('imports nothing when a line is wrong, and names every wrong line', async () => {
    const taken = { name: 'Taken', ...establishedKeys() };
    const importedFirst = await cli(['apps', 'import', fileOf(JSON.stringify(taken))]);
    assert.equal(importedFirst.code, 0, importedFirst.stderr);

    const good = { name: 'Good', ...establishedKeys() };
    const goodToo = { name: 'Good too', ...tesseraKeys() };
    const duplicate = { name: 'Twice', ...tesseraKeys() };
    const shortSecret = hex(16);
    const lines: (Line | string)[] = [
      good, // 1
      { name: 'Upper case', ...establishedKeys(), appId: 'ABCDEF12' }, // 2: bad format
      { name: 'Short secret', ...establishedKeys(), clientSecret: shortSecret }, // 3: bad format
      duplicate, // 4
      { ...duplicate, name: 'Twice again', clientId: hex(16) }, // 5: the AppID of line 4
      { name: 'Store has its ClientID', ...establishedKeys(), clientId: taken.clientId }, // 6
      { name: 'Store has its AppID', ...tesseraKeys(), appId: taken.appId }, // 7
      '{"name": "Not JSON", ', // 8
      { name: 'Unknown field', ...establishedKeys(), region: 'eu' }, // 9
      { name: 'No secret', appId: hex(4), appKey: hex(16), clientId: hex(16) }, // 10
      { name: 'Nobody', ...establishedKeys(), owner: 'nobody@example.com' }, // 11
      { name: 'Bad configuration', ...establishedKeys(), configuration: { requireAppKey: 'yes' } }, // 12
      { name: '', ...establishedKeys() }, // 13
      '', // 14: blank, fine
      goodToo, // 15
      { name: 'Zeros', ...establishedKeys(), clientSecret: '0'.repeat(64) }, // 16: anyone could guess it
      { name: 'Wrong checksum', ...tesseraKeys(), clientSecret: `tessera_${'A'.repeat(49)}` }, // 17
    ];
    const wrong = [2, 3, 5, 6, 7, 8, 9, 10, 11, 12, 13, 16, 17];
    const file = fileOf(jsonLines(lines));
    const count = await appCount();

    const text = await cli(['apps', 'import', file]);
    assert.equal(text.code, 1, text.stdout);
    assert.equal(text.stdout, '');
    const named = [...text.stderr.matchAll(/^tessera: line (\d+): /gm)].map((match) => Number(match[1]));
    assert.deepEqual([...new Set(named)], wrong, text.stderr);
    assert.match(text.stderr, /Nothing was imported/);
    assert.ok(!text.stderr.includes(shortSecret), 'a ClientSecret is never echoed');

    const json = await cli(['apps', 'import', file, '--json']);
    assert.equal(json.code, 1);
    const refusal = parseJson(json.stderr, 'apps import --json refusal');
    assert.equal(refusal.errorCode, 'IMPORT_REFUSED');
    assert.equal(refusal.lines, 17);
    assert.deepEqual([...new Set(refusal.problems.map((problem: { line: number }) => problem.line))], wrong);
    for (const problem of refusal.problems) assert.equal(typeof problem.message, 'string');

    // All or nothing: not even the good lines.
    assert.equal(await appCount(), count);
    for (const app of [good, goodToo, duplicate]) assert.equal(await tessera.store.apps.findById(app.appId), undefined);
  });

  it('a 1 MiB file of empty objects is refused with its first problems listed and the rest counted, not 350,000 lines of them', async () => {
    const lines = Math.floor((1024 * 1024) / 3);
    const refused = await cli(['apps', 'import', fileOf('{}\n'.repeat(lines)), '--json']);
    assert.equal(refused.code, 1);
    assert.ok(refused.stderr.length < 200_000, `${refused.stderr.length} characters of problems`);
    const refusal = parseJson(refused.stderr, 'apps import --json refusal');
    assert.equal(refusal.lines, lines);
    assert.equal(refusal.problems.length, MAX_LISTED_PROBLEMS);
    assert.equal(refusal.unlistedProblems, lines - MAX_LISTED_PROBLEMS);
    assert.match(refusal.message, new RegExp(`the file has ${lines} problems in its ${lines} lines`));
  });

  it('refuses a file it cannot read, and wrong usage', async () => {
    const missing = await cli(['apps', 'import', join(dir, 'no-such-file.jsonl')]);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /Cannot read/);
    const usage = await cli(['apps', 'import']);
    assert.equal(usage.code, 2);
  });

  it('export writes every app as import reads it, without ClientSecrets; with the secrets added back it imports again', async () => {
    const app = { name: 'Round trip', ...establishedKeys(), owner: ownerEmail, configuration: { anonymousTokenMaxLifetimeSeconds: 600 } };
    assert.equal((await cli(['apps', 'import', fileOf(JSON.stringify(app))])).code, 0);

    const exported = await cli(['apps', 'export']);
    assert.equal(exported.code, 0, exported.stderr);
    const lines = exported.stdout
      .trimEnd()
      .split('\n')
      .map((line) => parseJson(line, 'an exported line'));
    assert.equal(lines.length, await appCount());
    for (const line of lines) {
      assert.deepEqual(Object.keys(line).sort(), ['appId', 'appKey', 'clientId', 'configuration', 'name', 'owner']);
    }
    const line = lines.find((entry) => entry.appId === app.appId);
    assert.deepEqual(line, {
      name: app.name,
      appId: app.appId,
      appKey: app.appKey,
      clientId: app.clientId,
      owner: ownerEmail,
      configuration: {
        ...DEFAULT_APP_CONFIGURATION,
        adminTokenMaxLifetimeSeconds: null,
        anonymousTokenMaxLifetimeSeconds: 600,
        requireAppKey: false,
        allowedOrigins: [],
      },
    });
    assert.ok(!exported.stdout.includes(app.clientSecret));
    const asJson = await cli(['apps', 'export', '--json']);
    assert.equal(asJson.stdout, exported.stdout);

    // Re-imported as it is: refused, the secret is missing (and the keys are taken).
    const again = await cli(['apps', 'import', fileOf(JSON.stringify(line))]);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /clientSecret is missing/);

    // Moved out and back in: deleted, then imported from the export with its secret added.
    assert.equal((await cli(['apps', 'delete', app.appId])).code, 0);
    const back = await cli(['apps', 'import', fileOf(JSON.stringify({ ...line, clientSecret: app.clientSecret })), '--json']);
    assert.equal(back.code, 0, back.stderr);
    assert.equal(parseJson(back.stdout, 'apps import --json').owned, 1);
    let admin = await adminTokenRequest(server.baseUrl, app);
    for (const started = Date.now(); admin.status !== 200 && Date.now() - started < 2_000;) {
      await sleep(50);
      admin = await adminTokenRequest(server.baseUrl, app);
    }
    assert.equal(admin.status, 200, admin.text);
  });
});
