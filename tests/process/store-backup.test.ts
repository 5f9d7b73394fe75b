import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import Database from 'libsql';
import {
  adminTokenRequest,
  anonymousTokenRequest,
  childrenOfFile,
  createAppWithCli,
  Load,
  now,
  runCli,
  sleep,
  startTessera,
  terminate,
  whoami,
  type CreatedApp,
} from '../helpers/fleet.js';
import { REPO_ROOT, TESSERA_BIN } from '../helpers/process.js';
import { createPostgresDatabase } from '../helpers/store.js';

// The restore drill: `tessera store backup` of a SQLite store while a server issues tokens as fast
// as it can, then a fresh server on the backup file honours every token answered before the backup
// began. And PostgreSQL's equivalent as docs/deployment.md shows it: pg_dump, pg_restore into a new
// database, a server on it.

const BIN = TESSERA_BIN;
const run = promisify(execFile);

const children = childrenOfFile();

interface Answered {
  appId: string;
  token: string;
  at: number;
}

/** Checks tokens a few at a time; returns those the server does not accept, with the status. */
async function refused(baseUrl: string, tokens: Answered[]): Promise<string[]> {
  const failures: string[] = [];
  for (let index = 0; index < tokens.length; index += 16) {
    await Promise.all(
      tokens.slice(index, index + 16).map(async ({ appId, token }) => {
        const outcome = await whoami(baseUrl, appId, token);
        if (outcome.status !== 200) failures.push(`${outcome.status} ${outcome.text.slice(0, 100)}`);
      }),
    );
  }
  return failures;
}

describe('tessera store backup: a consistent copy of a live SQLite store, and the restore drill', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'tessera-store-backup-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('backs up under load; a server on the backup accepts every token answered before the backup began', async (t) => {
    const databaseUrl = `sqlite:${join(dir, 'live.db')}`;
    const options = { entry: BIN, cwd: REPO_ROOT, databaseUrl };
    const app = await createAppWithCli(children, options, 'Live');
    const server = await startTessera(children, options);
    const answered: Answered[] = [];
    const load = new Load();
    load.start(4, async (loop) => {
      const outcome = loop % 2 === 0 ? await anonymousTokenRequest(server.baseUrl, app) : await adminTokenRequest(server.baseUrl, app);
      if (outcome.status === 200) answered.push({ appId: app.appId, token: outcome.body.access_token as string, at: outcome.receivedAt });
    });
    const backupPath = join(dir, 'backup.db');
    let backupStartedAt: number;
    let backedUp;
    try {
      await sleep(1_500);
      backupStartedAt = now();
      backedUp = await runCli(children, options, ['store', 'backup', backupPath, '--json']);
      await sleep(300);
    } finally {
      await load.stop();
      await terminate(server);
    }
    assert.deepEqual(load.crashes, []);
    assert.equal(backedUp.code, 0, backedUp.stderr);
    const result = JSON.parse(backedUp.stdout);
    assert.equal(result.to, backupPath);
    assert.ok(result.bytes > 0);
    assert.equal(statSync(backupPath).mode & 0o777, 0o600, 'readable by its owner only');
    const backup = new Database(backupPath, { readonly: true });
    try {
      assert.equal((backup.prepare('PRAGMA integrity_check').get() as { integrity_check: string }).integrity_check, 'ok');
    } finally {
      backup.close();
    }

    const before = answered.filter((token) => token.at < backupStartedAt);
    const during = answered.filter((token) => token.at >= backupStartedAt);
    assert.ok(before.length >= 100, `only ${before.length} tokens before the backup`);
    assert.ok(during.length > 0, 'the load went on during the backup');
    t.diagnostic(`${before.length} tokens answered before the backup began, ${during.length} during and after it`);

    const again = await runCli(children, options, ['store', 'backup', backupPath]);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /exists already/);

    const restored = await startTessera(children, { ...options, databaseUrl: `sqlite:${backupPath}` });
    try {
      assert.deepEqual(await refused(restored.baseUrl, before), [], `of ${before.length} tokens answered before the backup`);
    } finally {
      await terminate(restored);
    }
  });

  it('on PostgreSQL, store backup points to pg_dump; pg_dump and pg_restore into a new database keep every token working', async (t) => {
    const source = await createPostgresDatabase();
    const target = await createPostgresDatabase();
    try {
      const options = { entry: BIN, cwd: REPO_ROOT, databaseUrl: source.databaseUrl };
      const refusedBackup = await runCli(children, options, ['store', 'backup', join(dir, 'pg.db')]);
      assert.equal(refusedBackup.code, 1);
      assert.match(refusedBackup.stderr, /pg_dump --format=custom/);

      try {
        await run('pg_dump', ['--version']);
      } catch {
        t.skip('pg_dump is not installed here');
        return;
      }
      const app: CreatedApp = await createAppWithCli(children, options, 'Dumped');
      const server = await startTessera(children, options);
      const tokens: Answered[] = [];
      try {
        for (let i = 0; i < 10; i++) {
          for (const outcome of [await anonymousTokenRequest(server.baseUrl, app), await adminTokenRequest(server.baseUrl, app)]) {
            assert.equal(outcome.status, 200, outcome.text);
            tokens.push({ appId: app.appId, token: outcome.body.access_token as string, at: outcome.receivedAt });
          }
        }
        // While the server runs: pg_dump reads one snapshot.
        const dumpFile = join(dir, 'tessera.dump');
        await run('pg_dump', ['--format=custom', `--file=${dumpFile}`, source.databaseUrl]);
        await run('pg_restore', ['--no-owner', `--dbname=${target.databaseUrl}`, dumpFile]);
      } finally {
        await terminate(server);
      }
      const restored = await startTessera(children, { ...options, databaseUrl: target.databaseUrl });
      try {
        assert.deepEqual(await refused(restored.baseUrl, tokens), []);
        assert.equal((await adminTokenRequest(restored.baseUrl, app)).status, 200, 'the restored store takes new tokens');
      } finally {
        await terminate(restored);
      }
    } finally {
      await source.drop();
      await target.drop();
    }
  });
});
