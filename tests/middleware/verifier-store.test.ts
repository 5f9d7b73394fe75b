import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import Database from 'libsql';
import pg from 'pg';
import { SCHEMA_VERSION } from 'tessera-tokens/internal/release.js';
import { openSqliteStore } from '../../src/store/sqlite/store.js';
import { TesseraVerifier, type AuthenticationRequest } from 'tessera-tokens/internal/verifier.js';
import { OPERATOR } from '../../src/request-context.js';
import { adminTokenOf, anonymousTokenOf, basic, bearer, revokeToken } from '../helpers/http.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { createPostgresDatabase, createPostgresTestStore, POSTGRES_ADMIN_URL } from '../helpers/store.js';

// Another service's verifier reads the store Tessera made, as that release of Tessera wrote it. It
// never makes a store, migrates one or writes to one: a wrong DATABASE_URL or a store that another
// release migrated is refused when the verifier opens, saying why, rather than served as empty.

const NO_STORE =
  /^There is no Tessera store at .+: Tessera makes it when it first starts on it \(or with `tessera migrate`\)\. Check DATABASE_URL, and start Tessera first\.$/;

/** Waits until the verifier refuses the request with INVALID_TOKEN; fails if it takes over a second. */
async function refusedWithinASecond(verifier: TesseraVerifier, request: AuthenticationRequest): Promise<void> {
  const deadline = Date.now() + 1_000;
  for (;;) {
    const refused = await Promise.resolve(verifier.authenticate(request)).then(
      () => false,
      (error: { code?: string }) => error.code === 'INVALID_TOKEN',
    );
    if (refused) return;
    assert.ok(Date.now() < deadline, 'the revoked token still works after a second');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const sha256 = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex');

describe('TesseraVerifier.open on SQLite reads only a file Tessera made', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'tessera-verifier-store-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('refuses a path with no file, and makes none', async () => {
    const path = join(dir, 'missing', 'tessera.db');
    await assert.rejects(TesseraVerifier.open({ databaseUrl: `sqlite:${path}` }), (error: Error) => {
      assert.match(error.message, NO_STORE);
      assert.ok(error.message.includes(path), error.message);
      return true;
    });
    assert.equal(existsSync(join(dir, 'missing')), false);
  });

  it('refuses a file that is not a Tessera store, and leaves it as it was', async () => {
    const path = join(dir, 'other.db');
    const other = new Database(path);
    other.exec('CREATE TABLE notes (body TEXT)');
    other.close();
    const before = sha256(path);
    await assert.rejects(TesseraVerifier.open({ databaseUrl: path }), (error: Error) => {
      assert.match(error.message, NO_STORE);
      return true;
    });
    assert.equal(sha256(path), before);
  });

  it('refuses a file that lacks a migration of this release, naming it, and does not migrate it', async () => {
    const path = join(dir, 'behind.db');
    await openSqliteStore(path).close();
    const db = new Database(path);
    db.prepare('DELETE FROM schema_migrations WHERE version = :version').run({ version: SCHEMA_VERSION });
    db.close();
    await assert.rejects(TesseraVerifier.open({ databaseUrl: path }), (error: Error) => {
      assert.match(
        error.message,
        new RegExp(
          `^The store at .+ lacks migration ${SCHEMA_VERSION}, which this verifier \\(Tessera \\S+\\) reads with: start Tessera \\S+ on it first`,
        ),
      );
      return true;
    });
    const after = new Database(path);
    const applied = after.prepare('SELECT version FROM schema_migrations WHERE version = :version').all({ version: SCHEMA_VERSION });
    after.close();
    assert.deepEqual(applied, []);
  });

  it("checks requests on a store Tessera made and leaves the file's bytes as they were", async () => {
    const path = join(dir, 'served.db');
    const seeded = openSqliteStore(path);
    const server = await startServer({ testStore: { store: seeded, databaseUrl: `sqlite:${path}`, dispose: () => seeded.close() } });
    const token = await adminTokenOf(server);
    await server.close();
    await seeded.close();
    const before = sha256(path);
    const verifier = await TesseraVerifier.open({ databaseUrl: `sqlite:${path}` });
    try {
      const request = { appId: server.app.appId, path: `/api/apps/${server.app.appId}/things` };
      assert.equal((await verifier.authenticate({ ...request, authorization: bearer(token) })).kind, 'admin');
      assert.equal((await verifier.authenticate({ ...request, authorization: basic(server.app.appId) })).kind, 'anonymous');
    } finally {
      await verifier.close();
    }
    assert.equal(sha256(path), before);
  });
});

describe('TesseraVerifier.open on PostgreSQL reads only a database Tessera made', () => {
  let admin: pg.Client;
  before(async () => {
    admin = new pg.Client({ connectionString: POSTGRES_ADMIN_URL });
    await admin.connect();
  });
  after(() => admin.end());

  it('refuses an empty database, and creates nothing in it', async () => {
    const database = await createPostgresDatabase();
    try {
      await assert.rejects(TesseraVerifier.open({ databaseUrl: database.databaseUrl }), (error: Error) => {
        assert.match(error.message, NO_STORE);
        assert.ok(!error.message.includes('@'), `the URL is not repeated: ${error.message}`);
        return true;
      });
      const client = new pg.Client({ connectionString: database.databaseUrl });
      await client.connect();
      const tables = await client.query("SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'");
      await client.end();
      assert.deepEqual(tables.rows, []);
    } finally {
      await database.drop();
    }
  });

  describe('as a role that may only read', () => {
    const role = `tessera_verifier_reads_${process.pid}`;
    let server: TestServer;
    let url: string;

    before(async () => {
      server = await startServer({ testStore: await createPostgresTestStore() });
      const database = new URL(server.testStore.databaseUrl);
      await admin.query(`CREATE ROLE ${role} LOGIN`);
      const owner = new pg.Client({ connectionString: server.testStore.databaseUrl });
      await owner.connect();
      await owner.query(`GRANT SELECT ON ALL TABLES IN SCHEMA public TO ${role}`);
      await owner.end();
      database.username = role;
      url = database.toString();
    });
    after(async () => {
      await server?.close();
      await server?.testStore.dispose();
      await admin.query(`DROP ROLE IF EXISTS ${role}`);
    });

    it('opens, checks Basic and admin tokens, and sees a token revoked through Tessera within a second', async () => {
      const token = await adminTokenOf(server);
      const verifier = await TesseraVerifier.open({ databaseUrl: url });
      try {
        const request = { appId: server.app.appId, path: `/api/apps/${server.app.appId}/things` };
        assert.equal((await verifier.authenticate({ ...request, authorization: bearer(token) })).kind, 'admin');
        assert.equal((await verifier.authenticate({ ...request, authorization: basic(server.app.appId) })).kind, 'anonymous');
        assert.equal((await revokeToken(server.appUrl, token)).status, 200);
        await refusedWithinASecond(verifier, { ...request, authorization: bearer(token) });
      } finally {
        await verifier.close();
      }
    });

    it('checks JWT access tokens, admin and anonymous, and sees them revoked within a second', async () => {
      await server.tessera.apps.configure(server.app.appId, { accessTokenFormat: 'jwt' }, OPERATOR);
      try {
        const admin = await adminTokenOf(server);
        const anonymous = await anonymousTokenOf(server);
        const verifier = await TesseraVerifier.open({ databaseUrl: url });
        try {
          const request = { appId: server.app.appId, path: `/api/apps/${server.app.appId}/things` };
          assert.equal((await verifier.authenticate({ ...request, authorization: bearer(admin) })).kind, 'admin');
          assert.equal((await verifier.authenticate({ ...request, authorization: bearer(anonymous) })).kind, 'anonymous');
          for (const token of [anonymous, admin]) {
            assert.equal((await revokeToken(server.appUrl, token, bearer(admin))).status, 200);
            await refusedWithinASecond(verifier, { ...request, authorization: bearer(token) });
          }
        } finally {
          await verifier.close();
        }
      } finally {
        await server.tessera.apps.configure(server.app.appId, { accessTokenFormat: 'opaque' }, OPERATOR);
      }
    });
  });
});
