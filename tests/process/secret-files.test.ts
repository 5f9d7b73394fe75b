import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { adminTokenRequest, anonymousTokenRequest, childrenOfFile, whoami, type CreatedApp } from '../helpers/fleet.js';
import { childEnvironment, REPO_ROOT, startServerProcess, TESSERA_BIN } from '../helpers/process.js';
import { createPostgresDatabase, POSTGRES_ADMIN_URL } from '../helpers/store.js';

// The database URL as a container image is given it: in a file that DATABASE_URL_FILE names, with
// no DATABASE_URL in the environment. The real `tessera serve` and CLI, on SQLite and PostgreSQL.

const run = promisify(execFile);
const children = childrenOfFile();

/** A password PostgreSQL's trust authentication never asks for: it is in the URL only to be looked for in the output. */
const PASSWORD = 'file-only-secret-4711';

/** `tessera ARGS` with exactly `env` as Tessera's settings; never throws. */
async function tessera(env: Record<string, string>, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [TESSERA_BIN, ...args], { cwd: REPO_ROOT, env: childEnvironment(env) });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const { code, stdout, stderr } = error as { code: number; stdout: string; stderr: string };
    return { code, stdout, stderr };
  }
}

describe('DATABASE_URL_FILE: tessera serve and the CLI with the database URL in a file', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'tessera-secret-files-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  const secretFile = (name: string, content: string) => {
    const path = join(dir, name);
    writeFileSync(path, content, { mode: 0o600 });
    return path;
  };

  for (const backend of ['sqlite', 'postgres'] as const) {
    it(`serves on ${backend} with only DATABASE_URL_FILE: the CLI creates an app and the server issues its tokens`, async () => {
      let databaseUrl: string;
      let drop = async () => {};
      if (backend === 'sqlite') {
        databaseUrl = `sqlite:${join(dir, 'tessera.db')}`;
      } else {
        const database = await createPostgresDatabase();
        drop = database.drop;
        const url = new URL(database.databaseUrl);
        url.password = PASSWORD;
        databaseUrl = url.toString();
        assert.equal(new URL(POSTGRES_ADMIN_URL).password, '', 'the test server trusts its clients, whatever the password');
      }
      try {
        const env = { DATABASE_URL_FILE: secretFile(`database-url-${backend}`, `${databaseUrl}\n`), RATE_LIMITS: 'off', DEMO_APP: 'off' };
        const server = await startServerProcess({ entry: TESSERA_BIN, cwd: REPO_ROOT, env });
        children.add(server.child);

        const created = await tessera(env, ['apps', 'create', '--name', 'From a file', '--json']);
        assert.equal(created.code, 0, created.stderr);
        const app = JSON.parse(created.stdout) as CreatedApp;

        const admin = await adminTokenRequest(server.baseUrl, app);
        assert.equal(admin.status, 200, admin.text);
        assert.equal((await whoami(server.baseUrl, app.appId, admin.body.access_token)).body.principal, 'admin');
        const anonymous = await anonymousTokenRequest(server.baseUrl, app);
        assert.equal(anonymous.status, 200, anonymous.text);

        // The store really is the file's: the CLI lists the app from it.
        const listed = await tessera(env, ['apps', 'list', '--json']);
        assert.deepEqual(
          (JSON.parse(listed.stdout) as { appId: string }[]).map((entry) => entry.appId),
          [app.appId],
        );
        for (const output of [server.stdout(), server.stderr(), created.stderr, listed.stderr]) {
          assert.ok(!output.includes(PASSWORD), 'the password is never printed');
        }
        server.child.kill('SIGTERM');
        assert.equal((await server.exited).code, 0);
      } finally {
        await drop();
      }
    });
  }

  it('refuses to start, exit 2, with both DATABASE_URL and DATABASE_URL_FILE, or a file it cannot read; the secret is never printed', async () => {
    const url = `postgres://tessera:${PASSWORD}@127.0.0.1:1/tessera`;
    const both = await tessera({ DATABASE_URL: url, DATABASE_URL_FILE: secretFile('both', url) }, ['serve']);
    assert.equal(both.code, 2, both.stderr);
    assert.match(both.stderr, /^tessera: DATABASE_URL and DATABASE_URL_FILE are both set/m);

    const missing = join(dir, 'not-there');
    const cli = await tessera({ DATABASE_URL_FILE: missing }, ['apps', 'list', '--json']);
    assert.equal(cli.code, 2, cli.stderr);
    const error = JSON.parse(cli.stderr) as { errorCode: string; message: string };
    assert.equal(error.errorCode, 'CONFIGURATION');
    assert.equal(error.message, `DATABASE_URL_FILE: cannot read ${missing} (no such file).`);

    const empty = secretFile('empty', '\n');
    const emptied = await tessera({ DATABASE_URL_FILE: empty }, ['serve']);
    assert.equal(emptied.code, 2);
    assert.match(emptied.stderr, /DATABASE_URL_FILE: .* is empty/);

    const wrong = secretFile('wrong', `mysql://tessera:${PASSWORD}@db/tessera\n`);
    const refused = await tessera({ DATABASE_URL_FILE: wrong }, ['serve']);
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /DATABASE_URL must be .*read from .*wrong \(DATABASE_URL_FILE\)/);
    for (const output of [both, cli, emptied, refused]) assert.ok(!`${output.stdout}${output.stderr}`.includes(PASSWORD));
  });
});
