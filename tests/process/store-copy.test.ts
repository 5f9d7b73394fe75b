import assert from 'node:assert/strict';
import { chmodSync, chownSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import Database from 'libsql';
import { OPERATOR } from '../../src/request-context.js';
import { canonicalRow, openDump } from '../../src/store/copy.js';
import { TABLES } from '../../src/store/dump.js';
import { parseDatabaseUrl } from 'tessera-tokens/internal/store/location.js';
import { openStore } from '../../src/store/open.js';
import { SQLITE_MIGRATIONS } from '../../src/store/sqlite/migrations.js';
import { createTessera } from '../../src/tessera.js';
import {
  adminTokenRequest,
  anonymousTokenRequest,
  childrenOfFile,
  runCli,
  sleep,
  startTessera,
  terminate,
  tokenRequest,
  whoami,
  type CliResult,
} from '../helpers/fleet.js';
import { makeApp } from '../helpers/fixtures.js';
import { appUrlOf, bearer, revokeToken } from '../helpers/http.js';
import { linkTokenOf, PASSWORD } from '../helpers/portal.js';
import { portalClient, signInOverHttp, type PortalClient } from '../helpers/portal-http.js';
import { REPO_ROOT, type ServerProcess, TESSERA_BIN } from '../helpers/process.js';
import { createPostgresDatabase } from '../helpers/store.js';

/** The schema version of this release: the copy's source and target are at it. */
const SCHEMA_VERSION = SQLITE_MIGRATIONS.at(-1)!.version;

// `tessera store copy` as an operator moves a store: a SQLite store filled through a running
// server (and the operator's services on the same file), the server stopped, the store copied to a
// new PostgreSQL database, a server started there; then back to a new SQLite file. Every token,
// secret, key, session, event and count carries over, and the copy's counters go on past its ids.

const BIN = TESSERA_BIN;

const children = childrenOfFile();

interface App {
  appId: string;
  appKey: string;
  clientId: string;
  clientSecret: string;
}

/** What the source holds that a copy must keep working (or keep refusing). */
interface Expectations {
  app: App;
  /** The secret a rotation with a grace period replaced: it still works. */
  oldSecret: string;
  ownedApp: App;
  adminToken: string;
  anonymousToken: string;
  /** Signed by the key that was then retired. */
  retiredKeyToken: string;
  revokedAnonymousToken: string;
  revokedAdminToken: string;
  /** A portal client signed in before the copy. */
  portal: PortalClient;
  events: { id: string }[];
  counts: unknown;
}

describe('tessera store copy: SQLite to PostgreSQL and back, everything carried over', () => {
  let dir: string;
  let sqliteUrl: string;
  let postgres: { databaseUrl: string; drop(): Promise<void> } | undefined;
  let expected: Expectations;

  const cli = (args: string[], databaseUrl = sqliteUrl): Promise<CliResult> =>
    runCli(children, { entry: BIN, cwd: REPO_ROOT, databaseUrl }, args, 60_000);
  const server = (databaseUrl: string) => startTessera(children, { entry: BIN, cwd: REPO_ROOT, databaseUrl });

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tessera-store-copy-'));
    sqliteUrl = `sqlite:${join(dir, 'source.db')}`;
    postgres = await createPostgresDatabase();
  });
  after(async () => {
    await postgres?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('fills a SQLite store through a running server', async () => {
    const running = await server(sqliteUrl);
    const operator = createTessera({ store: await openStore(sqliteUrl) });
    try {
      const created = await operator.apps.create('Moving app');
      const app: App = { ...created };
      await operator.developers.create('ada@example.com', PASSWORD, OPERATOR);
      await operator.developers.create('bob@example.com', PASSWORD, OPERATOR);
      const owned = await operator.ownedApps.create('Owned app', 'ada@example.com', OPERATOR);
      const ownedApp: App = { appId: owned.appId, appKey: owned.appKey, clientId: owned.clientId, clientSecret: owned.clientSecret };
      const invitation = await operator.members.invite(ownedApp.appId, 'bob@example.com', OPERATOR);
      const bob = await operator.developers.find('bob@example.com');
      await operator.members.acceptInvitation(linkTokenOf(invitation.path), bob, {
        clientAddress: null,
        by: { kind: 'developer', developerId: bob.id },
      });
      await operator.members.invite(ownedApp.appId, 'carol@example.com', OPERATOR); // stays pending

      const issued = async (outcome: Promise<{ status: number; body: any; text: string }>) => {
        const response = await outcome;
        assert.equal(response.status, 200, response.text);
        return response.body.access_token as string;
      };
      const retiredKeyToken = await issued(anonymousTokenRequest(running.baseUrl, app));
      await operator.signingKeys.rotate();
      await operator.signingKeys.retire(1);
      await sleep(700); // the server's change poller
      const anonymousToken = await issued(anonymousTokenRequest(running.baseUrl, app));
      const revokedAnonymousToken = await issued(anonymousTokenRequest(running.baseUrl, app));
      assert.equal((await revokeToken(appUrlOf(running.baseUrl, app.appId), revokedAnonymousToken)).status, 200);
      const revokedAdminToken = await issued(adminTokenRequest(running.baseUrl, app));
      assert.equal((await revokeToken(appUrlOf(running.baseUrl, app.appId), revokedAdminToken)).status, 200);
      for (let i = 0; i < 20; i++) await issued(anonymousTokenRequest(running.baseUrl, ownedApp));
      const rotated = await operator.apps.rotateSecret(app.appId, { graceSeconds: 3600 }, OPERATOR);
      await sleep(700);
      const adminToken = await issued(tokenRequest(running.baseUrl, app.appId, app.clientId, rotated.clientSecret));
      assert.equal((await whoami(running.baseUrl, app.appId, retiredKeyToken)).status, 401, 'the retired key signs nothing valid');

      const portal = await signInOverHttp(running, 'ada@example.com');
      assert.equal((await portal.get('/portal/')).status, 200);

      expected = {
        app: { ...app, clientSecret: rotated.clientSecret },
        oldSecret: app.clientSecret,
        ownedApp,
        adminToken,
        anonymousToken,
        retiredKeyToken,
        revokedAnonymousToken,
        revokedAdminToken,
        portal,
        events: [],
        counts: undefined,
      };
    } finally {
      await operator.close();
      await terminate(running);
    }
    expected.events = await eventsOf(expected.app.appId, sqliteUrl);
    expected.counts = await countsOf(expected.ownedApp.appId, sqliteUrl);
    assert.ok(expected.events.length >= 5, JSON.stringify(expected.events));
  });

  it('copies SQLite into a new PostgreSQL database that a server had opened once (its first key is replaced), and verifies it', async () => {
    // A server started once on the new database made its first key: the copy takes its place.
    await (await openStore(postgres!.databaseUrl)).close();
    const copied = await cli(['store', 'copy', '--from', sqliteUrl, '--to', postgres!.databaseUrl, '--json']);
    assert.equal(copied.code, 0, copied.stderr);
    assert.equal(copied.stderr, '', 'nothing but the result with --json');
    const result = JSON.parse(copied.stdout);
    assert.equal(result.schemaVersion, SCHEMA_VERSION);
    assert.equal(result.tables.find((table: { name: string }) => table.name === 'keys').rows, 2);
    assert.ok(result.compared.tokens > 0 && result.compared.keys === 2, copied.stdout);
    await assertSameRows(sqliteUrl, postgres!.databaseUrl);
    // Equal but for the order of keys in details: PostgreSQL's jsonb keeps its own.
    assert.deepEqual(await eventsOf(expected.app.appId, postgres!.databaseUrl), expected.events);
    assert.deepEqual(await countsOf(expected.ownedApp.appId, postgres!.databaseUrl), expected.counts);
  });

  it('a server on the PostgreSQL copy honours every token, secret, key and session of before, and its counters go on', async () => {
    await checkServerOn(postgres!.databaseUrl);
  });

  it('copies PostgreSQL back into a new SQLite file, with a plain progress line per table on a pipe', async () => {
    const back = `sqlite:${join(dir, 'back.db')}`;
    const copied = await cli(['store', 'copy', '--from', postgres!.databaseUrl, '--to', back]);
    assert.equal(copied.code, 0, copied.stderr);
    assert.match(copied.stdout, /^Copied [0-9,]+ rows from postgres:\/\/.* to .*back\.db/m);
    assert.match(copied.stderr, /^tokens: [0-9,]+\/[0-9,]+ rows/m);
    assert.match(copied.stderr, /^developer_events: /m);
    await assertSameRows(postgres!.databaseUrl, back);
    await checkServerOn(back);
    // A key rotated on the copy gets a new id: SQLite's AUTOINCREMENT counter came along.
    const rotated = await cli(['keys', 'rotate', '--json'], back);
    assert.equal(rotated.code, 0, rotated.stderr);
    assert.deepEqual(
      JSON.parse(rotated.stdout).map((key: { id: number }) => key.id),
      [1, 2, 3],
    );
  });

  it('refuses a target that is not empty, naming what is there, and writes nothing', async () => {
    const before = await allRows(postgres!.databaseUrl);
    const refused = await cli(['store', 'copy', '--from', sqliteUrl, '--to', postgres!.databaseUrl]);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /is not empty: it holds apps \(2 rows\), tokens/);
    assert.match(refused.stderr, /Nothing was written/);
    assert.match(refused.stderr, /drop the target database/);
    assert.deepEqual(await allRows(postgres!.databaseUrl), before);

    const refusedFile = await cli(['store', 'copy', '--from', postgres!.databaseUrl, '--to', sqliteUrl, '--json']);
    assert.equal(refusedFile.code, 1);
    const error = JSON.parse(refusedFile.stderr);
    assert.equal(error.errorCode, 'CONFLICT');
    assert.match(error.message, /To start over, delete .*source\.db/);
  });

  it('refuses stores at different schema versions, a source that is not a store, and wrong usage', async () => {
    const newer = join(dir, 'newer.db');
    await (await openStore(`sqlite:${newer}`)).close();
    const db = new Database(newer);
    // A later release's migration that says this one may serve on it: the copy, not the start-up guard, refuses.
    db.prepare(
      'INSERT INTO schema_migrations (version, applied_at, release, serves_from) VALUES (:version, :at, :release, :servesFrom)',
    ).run({
      version: 99,
      at: Date.now(),
      release: '9.0.0',
      servesFrom: '0.1.0',
    });
    db.close();
    const mismatch = await cli(['store', 'copy', '--from', sqliteUrl, '--to', newer]);
    assert.equal(mismatch.code, 1);
    assert.match(mismatch.stderr, new RegExp(`schema version ${SCHEMA_VERSION}, the target at 99`));

    const missing = await cli(['store', 'copy', '--from', join(dir, 'nothing.db'), '--to', join(dir, 'new.db')]);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /there is no SQLite store at/);

    const badUrl = await cli(['store', 'copy', '--from', 'mysql://db/tessera', '--to', sqliteUrl]);
    assert.equal(badUrl.code, 2);
    assert.match(badUrl.stderr, /--from must be a file path, sqlite:PATH, or postgres:/);
    for (const args of [
      ['store', 'copy', '--from', sqliteUrl],
      ['store', 'move'],
    ]) {
      const usage = await cli(args);
      assert.equal(usage.code, 2, `${args.join(' ')}: ${usage.stderr}`);
      assert.match(usage.stderr, /usage: tessera store copy --from URL --to URL/);
    }
    const help = await cli(['store', '--help']);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /tessera store copy --from URL --to URL/);
    assert.match(help.stdout, /tessera store backup PATH/);
  });

  /** Starts a server on the copy and checks what must carry over; then what the copy writes must not collide. */
  async function checkServerOn(databaseUrl: string): Promise<void> {
    const running: ServerProcess = await server(databaseUrl);
    try {
      const { app, ownedApp } = expected;
      const status = async (token: string, appId = app.appId) => (await whoami(running.baseUrl, appId, token)).status;
      assert.equal(await status(expected.adminToken), 200, 'admin token');
      assert.equal(await status(expected.anonymousToken), 200, 'anonymous token signed by key 2');
      assert.equal(await status(expected.retiredKeyToken), 401, 'a token of the retired key');
      assert.equal(await status(expected.revokedAnonymousToken), 401, 'the revoked anonymous token');
      assert.equal(await status(expected.revokedAdminToken), 401, 'the revoked admin token');
      assert.equal((await tokenRequest(running.baseUrl, app.appId, app.clientId, app.clientSecret)).status, 200, 'the ClientSecret');
      assert.equal(
        (await tokenRequest(running.baseUrl, app.appId, app.clientId, expected.oldSecret)).status,
        200,
        'the old secret in its grace period',
      );
      assert.equal((await tokenRequest(running.baseUrl, app.appId, app.clientId, 'not the secret')).status, 401);
      assert.equal((await adminTokenRequest(running.baseUrl, ownedApp)).status, 200);

      // The session started before the copy, and a new sign-in.
      const carried = portalClient(running);
      for (const [name, value] of expected.portal.cookies) carried.cookies.set(name, value);
      const home = await carried.get('/portal/');
      assert.equal(home.status, 200, home.text.slice(0, 200));
      assert.match(home.text, /ada@example\.com/);
      assert.match((await carried.get(`/portal/apps/${ownedApp.appId}`)).text, /Owned app/);
      assert.equal((await portalClient(running).get('/portal/')).status, 303, 'no session, no portal');
      await signInOverHttp(running, 'ada@example.com');
      await signInOverHttp(running, 'bob@example.com');

      // The copy's counters go on past the copied ids: new events, a new revocation.
      const fresh = (await anonymousTokenRequest(running.baseUrl, app)).body.access_token as string;
      assert.equal((await revokeToken(appUrlOf(running.baseUrl, app.appId), fresh, bearer(fresh))).status, 200);
      assert.equal(await status(fresh), 401);
      assert.equal((await adminTokenRequest(running.baseUrl, app)).status, 200);
    } finally {
      await terminate(running);
    }
    const ids = (await eventsOf(expected.app.appId, databaseUrl)).map((event) => Number(event.id));
    assert.equal(new Set(ids).size, ids.length);
    assert.ok(ids.at(-1)! > Math.max(...expected.events.map((event) => Number(event.id))), 'new events have new ids');
  }

  async function eventsOf(appId: string, databaseUrl: string): Promise<{ id: string }[]> {
    const listed = await cli(['events', appId, '--json', '--limit', '100'], databaseUrl);
    assert.equal(listed.code, 0, listed.stderr);
    return listed.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { id: string });
  }

  async function countsOf(appId: string, databaseUrl: string): Promise<unknown> {
    const listed = await cli(['events', appId, '--counts', '--per', 'day', '--since', '7d', '--json'], databaseUrl);
    assert.equal(listed.code, 0, listed.stderr);
    const { since: _since, until: _until, ...counts } = JSON.parse(listed.stdout);
    return counts;
  }
});

describe('tessera store copy: a SQLite target no other user can read', () => {
  // The target holds every signing key and password hash. A new one is created readable by its owner
  // only; an existing one that others may open (or their -wal, -shm), or that another user owns, is
  // refused before anything is written into it.
  let dir: string;
  let source: string;
  const cli = (args: string[]): Promise<CliResult> =>
    runCli(children, { entry: BIN, cwd: REPO_ROOT, databaseUrl: `sqlite:${source}` }, args, 60_000);
  const copyTo = (target: string, json = false) =>
    cli(['store', 'copy', '--from', source, '--to', `sqlite:${target}`, ...(json ? ['--json'] : [])]);
  /** An empty file, with exactly this mode whatever the umask. */
  const emptyFile = (path: string, mode: number) => {
    writeFileSync(path, '');
    chmodSync(path, mode);
    return path;
  };
  const modeOf = (path: string) => statSync(path).mode & 0o777;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tessera-store-copy-mode-'));
    source = join(dir, 'source.db');
    const store = await openStore(source);
    await store.apps.insert(makeApp());
    await store.close();
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('creates a new target, and its folder, readable by the owner only', async () => {
    const target = join(dir, 'new-folder', 'copy.db');
    const copied = await copyTo(target);
    assert.equal(copied.code, 0, copied.stderr);
    assert.equal(modeOf(target), 0o600);
    assert.equal(modeOf(join(dir, 'new-folder')), 0o700);
  });

  it('refuses an existing empty file that group or others may read or write, and writes nothing into it', async () => {
    for (const mode of [0o666, 0o640, 0o602]) {
      const target = emptyFile(join(dir, `open-${mode.toString(8)}.db`), mode);
      const refused = await copyTo(target);
      assert.equal(refused.code, 1, `mode ${mode.toString(8)}: ${refused.stdout}${refused.stderr}`);
      assert.match(
        refused.stderr,
        new RegExp(`the target .*open-${mode.toString(8)}\\.db is open to other users \\(mode 0${mode.toString(8)}\\)`),
      );
      assert.match(refused.stderr, /Nothing was written\. Give --to a path that does not exist/);
      assert.equal(statSync(target).size, 0, 'nothing written');
      assert.equal(modeOf(target), mode, 'its mode left as it was');
    }
    const json = await copyTo(emptyFile(join(dir, 'open-json.db'), 0o666), true);
    assert.equal(json.code, 1);
    assert.equal(JSON.parse(json.stderr).errorCode, 'CONFLICT');
  });

  it('refuses a target whose -wal or -shm file others may open', async () => {
    for (const suffix of ['-wal', '-shm']) {
      const target = emptyFile(join(dir, `beside${suffix}.db`), 0o600);
      emptyFile(`${target}${suffix}`, 0o666);
      const refused = await copyTo(target);
      assert.equal(refused.code, 1, `${suffix}: ${refused.stdout}${refused.stderr}`);
      assert.match(refused.stderr, new RegExp(`beside${suffix}\\.db${suffix} is open to other users \\(mode 0666\\)`));
      assert.equal(statSync(target).size, 0);
    }
  });

  it('refuses a file another user owns, even readable by its owner only', async (t) => {
    if (process.getuid?.() !== 0) return t.skip('making a file of another user takes root (chown)');
    const target = emptyFile(join(dir, 'nobody.db'), 0o600);
    chownSync(target, 65534, 65534);
    const refused = await copyTo(target);
    assert.equal(refused.code, 1, refused.stdout + refused.stderr);
    assert.match(refused.stderr, /the target .*nobody\.db belongs to another user \(uid 65534\).*run store copy as that user/);
    assert.equal(statSync(target).size, 0);
  });

  it('fills an existing empty file of its own user that only that user may open', async () => {
    const target = emptyFile(join(dir, 'mine.db'), 0o600);
    const copied = await copyTo(target, true);
    assert.equal(copied.code, 0, copied.stderr);
    assert.equal(JSON.parse(copied.stdout).tables.find((table: { name: string }) => table.name === 'apps').rows, 1);
    assert.equal(modeOf(target), 0o600);
  });
});

/** Every row of every table, as comparable text (JSON with sorted keys, blobs in hex). */
async function allRows(databaseUrl: string): Promise<Record<string, string[]>> {
  const dump = await openDump(parseDatabaseUrl(databaseUrl), 'source');
  try {
    const rows: Record<string, string[]> = {};
    for (const table of TABLES)
      rows[table.name] = (await dump.read(table, undefined, 1_000_000)).map((row) => canonicalRow(row, table)).sort();
    return rows;
  } finally {
    await dump.close();
  }
}

async function assertSameRows(fromUrl: string, toUrl: string): Promise<void> {
  const [from, to] = [await allRows(fromUrl), await allRows(toUrl)];
  for (const table of TABLES) assert.deepEqual(to[table.name], from[table.name], `table ${table.name}`);
  assert.ok(from.tokens!.length > 0 && from.events!.length > 0 && from.developer_sessions!.length > 0 && from.app_members!.length > 0);
  assert.ok(
    from.one_time_links!.length > 0 &&
      from.revoked_tokens!.length > 0 &&
      from.event_counts!.length > 0 &&
      from.developer_events!.length > 0,
  );
}
