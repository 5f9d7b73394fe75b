import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import Database from 'libsql';
import pg from 'pg';
import { POSTGRES_MIGRATIONS } from '../../src/store/postgres/migrations.js';
import { SQLITE_MIGRATIONS } from '../../src/store/sqlite/migrations.js';
import { assertError, assertInvalidToken } from '../helpers/assert.js';
import { Children, runCli, sleep, terminate } from '../helpers/fleet.js';
import { appUrlOf, basic, bearer, introspectToken, request, requestToken, revokeToken, whoami, type AppEndpoint } from '../helpers/http.js';
import { REPO_ROOT, startServerProcess, TESSERA_MAIN, type ServerProcess } from '../helpers/process.js';
import { createPostgresDatabase } from '../helpers/store.js';

// An upgrade, on each store, from a database that the previous release wrote through its own CLI
// and server (tests/upgrade/fixtures/make-fixtures.sh): the current `tessera serve` opens it,
// migrates it, and everything a client held keeps doing what it did. Only behaviour over HTTP is
// checked (how tokens are stored may change), except that every migration is applied.

const FIXTURES = join(REPO_ROOT, 'tests', 'upgrade', 'fixtures');

interface LegacyToken {
  kind: 'admin' | 'anonymous';
  token: string;
  id: string;
  expiresAt: number | null;
  /** What it must do after the upgrade. */
  expect: 'valid' | 'expired' | 'revoked';
}

interface LegacyEvent {
  id: string;
  type: string;
  at: string;
  principal: string | null;
  details: Record<string, unknown>;
}

interface LegacyApp {
  name: string;
  appId: string;
  appKey: string;
  clientId: string;
  clientSecret: string;
  adminId: string;
  configuration: Record<string, unknown>;
  tokens: LegacyToken[];
  /** What the previous release listed, newest first. */
  events: LegacyEvent[];
}

interface Fixture {
  release: string;
  generatedAt: string;
  stores: Record<'sqlite' | 'postgres', { apps: LegacyApp[] }>;
}

const fixture = JSON.parse(readFileSync(join(FIXTURES, 'previous-release.json'), 'utf8')) as Fixture;

/** An upgraded store: where it is, and what schema_migrations holds. */
interface UpgradedStore {
  databaseUrl: string;
  appliedVersions(): Promise<number[]>;
  dispose(): Promise<void>;
}

async function sqliteFromFixture(): Promise<UpgradedStore> {
  const dir = mkdtempSync(join(tmpdir(), 'tessera-upgrade-test-'));
  const path = join(dir, 'tessera.db');
  copyFileSync(join(FIXTURES, 'previous-release.sqlite'), path);
  return {
    databaseUrl: `sqlite:${path}`,
    async appliedVersions() {
      const db = new Database(path, { readonly: true });
      try {
        return (db.prepare('SELECT version FROM schema_migrations ORDER BY version').all() as { version: number }[]).map(
          (row) => row.version,
        );
      } finally {
        db.close();
      }
    },
    async dispose() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function postgresFromFixture(): Promise<UpgradedStore> {
  const { databaseUrl, drop } = await createPostgresDatabase();
  const query = async <Row extends pg.QueryResultRow>(sql: string) => {
    // A client of its own: the dump sets the session's search_path.
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    try {
      return (await client.query<Row>(sql)).rows;
    } finally {
      await client.end();
    }
  };
  await query(readFileSync(join(FIXTURES, 'previous-release.postgres.sql'), 'utf8'));
  return {
    databaseUrl,
    async appliedVersions() {
      const rows = await query<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version');
      return rows.map((row) => row.version);
    },
    dispose: drop,
  };
}

const STORES = {
  sqlite: { open: sqliteFromFixture, migrations: SQLITE_MIGRATIONS },
  postgres: { open: postgresFromFixture, migrations: POSTGRES_MIGRATIONS },
} as const;

/** The legacy tokens of an app that must still work, and of those, one kind. */
const live = (app: LegacyApp, kind?: LegacyToken['kind']) =>
  app.tokens.filter((token) => token.expect === 'valid' && (kind === undefined || token.kind === kind));
/** The never-expiring legacy admin token: the admin credential of the checks. */
const legacyAdminToken = (app: LegacyApp) => live(app, 'admin').find((token) => token.expiresAt === null)!.token;

async function assertWorks(appUrl: string, app: LegacyApp, token: LegacyToken): Promise<void> {
  const response = await whoami(appUrl, bearer(token.token));
  assert.equal(response.status, 200, `${token.kind} token (expiresAt ${token.expiresAt}): ${response.text}`);
  assert.deepEqual(response.body, { appId: app.appId, principal: token.kind, id: token.id, auth: 'bearer', expiresAt: token.expiresAt });
}

async function assertRefused(appUrl: string, token: LegacyToken | string): Promise<void> {
  const value = typeof token === 'string' ? token : token.token;
  const response = await whoami(appUrl, bearer(value));
  assertInvalidToken(response, value);
}

for (const [storeName, { open, migrations }] of Object.entries(STORES)) {
  describe(`upgrade from release ${fixture.release} on ${storeName}`, () => {
    const apps = fixture.stores[storeName as keyof typeof STORES].apps;
    let store: UpgradedStore;
    let server: ServerProcess;
    const endpoint = (app: LegacyApp): AppEndpoint => ({ ...app, appUrl: appUrlOf(server.baseUrl, app.appId) });
    const appUrl = (app: LegacyApp) => endpoint(app).appUrl;
    /** The live legacy tokens revoked one by one here. */
    const revokedHere = new Set<LegacyToken>();

    before(async () => {
      assert.equal(apps.length, 2);
      store = await open();
      server = await startServerProcess({
        entry: TESSERA_MAIN,
        cwd: REPO_ROOT,
        env: { DATABASE_URL: store.databaseUrl, RATE_LIMITS: 'off', DEMO_APP: 'off' },
      });
    });

    after(async () => {
      if (server !== undefined) await terminate(server);
      if (store !== undefined) await store.dispose();
    });

    it('applies every migration the current code lists', async () => {
      assert.deepEqual(
        await store.appliedVersions(),
        migrations.map((migration) => migration.version).sort((a, b) => a - b),
      );
    });

    it('keeps every live legacy token working, with its principal and expiry', async () => {
      for (const app of apps) {
        const tokens = live(app);
        assert.ok(tokens.filter((token) => token.kind === 'anonymous').length >= 4 && tokens.some((token) => token.kind === 'admin'));
        for (const token of tokens) await assertWorks(appUrl(app), app, token);
      }
    });

    it('refuses the legacy tokens that expired or were revoked', async () => {
      for (const app of apps) {
        const ended = app.tokens.filter((token) => token.expect !== 'valid');
        assert.deepEqual(ended.map((token) => token.expect).sort(), ['expired', 'revoked']);
        for (const token of ended) {
          if (token.expect === 'expired')
            assert.ok(Date.now() >= token.expiresAt!, 'the fixtures were written less than 2 minutes ago: run again later');
          await assertRefused(appUrl(app), token);
        }
      }
    });

    it('refuses a legacy token of one app on the other', async () => {
      const [first, second] = apps as [LegacyApp, LegacyApp];
      for (const kind of ['admin', 'anonymous'] as const) await assertRefused(appUrl(second), live(first, kind)[0]!);
    });

    it('introspects legacy tokens for a legacy admin token', async () => {
      const issuedBy = Math.floor(Date.parse(fixture.generatedAt) / 1000);
      for (const app of apps) {
        const admin = legacyAdminToken(app);
        for (const token of live(app)) {
          const response = await introspectToken(appUrl(app), token.token, bearer(admin));
          assert.equal(response.status, 200, response.text);
          const { active, token_type, principal, app_id, iat, exp, id } = response.body;
          assert.deepEqual(
            { active, token_type, principal, app_id },
            { active: true, token_type: 'bearer', principal: token.kind, app_id: app.appId },
          );
          assert.equal(exp, token.expiresAt === null ? undefined : Math.floor(token.expiresAt / 1000));
          assert.ok(Number.isInteger(iat) && iat <= issuedBy, `iat ${iat}`);
          if (token.kind === 'admin') assert.equal(id, app.adminId);
        }
        for (const token of app.tokens.filter((token) => token.expect !== 'valid')) {
          const response = await introspectToken(appUrl(app), token.token, bearer(admin));
          assert.equal(response.status, 200, response.text);
          assert.deepEqual(response.body, { active: false });
        }
      }
    });

    it('keeps the apps: their configuration, ClientSecret and AppKey', async () => {
      for (const app of apps) {
        const configuration = await request(`${appUrl(app)}/configuration`, { headers: { authorization: bearer(legacyAdminToken(app)) } });
        assert.equal(configuration.status, 200, configuration.text);
        for (const [field, value] of Object.entries(app.configuration)) assert.deepEqual(configuration.body[field], value, field);

        const admin = await requestToken(endpoint(app), {
          grant_type: 'client_credentials',
          client_id: app.clientId,
          client_secret: app.clientSecret,
        });
        assert.equal(admin.status, 200, admin.text);
        assert.equal(admin.body.id, app.adminId);
        const adminWho = await whoami(appUrl(app), bearer(admin.body.access_token));
        assert.deepEqual(adminWho.body, { appId: app.appId, principal: 'admin', id: app.adminId, auth: 'bearer', expiresAt: null });

        const anonymous = await requestToken(endpoint(app), {
          grant_type: 'client_credentials',
          client_id: app.appId,
          client_secret: app.appKey,
        });
        assert.equal(anonymous.status, 200, anonymous.text);
        const anonymousWho = await whoami(appUrl(app), bearer(anonymous.body.access_token));
        assert.deepEqual(anonymousWho.body, { appId: app.appId, principal: 'anonymous', id: 'ANONYMOUS', auth: 'bearer', expiresAt: null });

        // The configuration change the previous release made (requireAppKey) still holds.
        assert.equal(app.configuration.requireAppKey, true);
        const wrongKey = await requestToken(endpoint(app), {
          grant_type: 'client_credentials',
          client_id: app.appId,
          client_secret: 'not-the-app-key',
        });
        assertError(wrongKey, 401, 'invalid_client');
        const wrongSecret = await requestToken(endpoint(app), {
          grant_type: 'client_credentials',
          client_id: app.clientId,
          client_secret: 'not-the-secret',
        });
        assertError(wrongSecret, 401, 'invalid_client');
      }
    });

    it("still lists the old admin events (what needed the app's ClientSecret)", async () => {
      for (const app of apps) {
        const response = await request(`${appUrl(app)}/events?limit=500`, { headers: { authorization: bearer(legacyAdminToken(app)) } });
        assert.equal(response.status, 200, response.text);
        const listed = (response.body.events as LegacyEvent[]).map(({ type, at, principal }) => JSON.stringify({ type, at, principal }));
        // Anonymous issuance and refusals need no secret and may be listed as counts rather than
        // one by one; these may not.
        const adminEvents = app.events.filter(
          (event) => event.type === 'app.configuration_changed' || (event.type === 'token.issued' && event.principal === 'admin'),
        );
        assert.equal(adminEvents.length, 3);
        for (const { type, at, principal } of adminEvents) {
          assert.ok(listed.includes(JSON.stringify({ type, at, principal })), `${type} of ${at} is not listed`);
        }
      }
    });

    it('revokes a legacy anonymous token through RFC 7009', async () => {
      for (const app of apps) {
        const [byItself, byAdmin] = live(app, 'anonymous').slice(-2) as [LegacyToken, LegacyToken];
        const revoked = await revokeToken(appUrl(app), byItself.token);
        assert.equal(revoked.status, 200, revoked.text);
        await assertRefused(appUrl(app), byItself);
        revokedHere.add(byItself);
        const revokedByAdmin = await revokeToken(appUrl(app), byAdmin.token, bearer(legacyAdminToken(app)));
        assert.equal(revokedByAdmin.status, 200, revokedByAdmin.text);
        await assertRefused(appUrl(app), byAdmin);
        revokedHere.add(byAdmin);
        const introspected = await introspectToken(appUrl(app), byItself.token, bearer(legacyAdminToken(app)));
        assert.deepEqual(introspected.body, { active: false });
        // The others are untouched.
        for (const token of live(app).filter((token) => !revokedHere.has(token))) await assertWorks(appUrl(app), app, token);
      }
    });

    it('ends the legacy anonymous tokens of one app with DELETE …/tokens?kind=anonymous; admin tokens keep working', async () => {
      const [first, second] = apps as [LegacyApp, LegacyApp];
      const fresh = await requestToken(endpoint(first), {
        grant_type: 'client_credentials',
        client_id: first.appId,
        client_secret: first.appKey,
      });
      assert.equal(fresh.status, 200, fresh.text);

      const deleted = await request(`${appUrl(first)}/tokens?kind=anonymous`, {
        method: 'DELETE',
        headers: { authorization: bearer(legacyAdminToken(first)) },
      });
      assert.equal(deleted.status, 200, deleted.text);
      for (const token of live(first, 'anonymous')) await assertRefused(appUrl(first), token);
      await assertRefused(appUrl(first), fresh.body.access_token as string);
      for (const token of live(first, 'admin')) await assertWorks(appUrl(first), first, token);
      // Basic anonymous needs no token and is not affected.
      const basicWho = await whoami(appUrl(first), basic(first.appId));
      assert.equal(basicWho.status, 200, basicWho.text);

      // The other app's tokens are its own.
      for (const token of live(second).filter((token) => !revokedHere.has(token))) await assertWorks(appUrl(second), second, token);
      const secondDeleted = await request(`${appUrl(second)}/tokens?kind=anonymous`, {
        method: 'DELETE',
        headers: { authorization: bearer(legacyAdminToken(second)) },
      });
      assert.equal(secondDeleted.status, 200, secondDeleted.text);
      for (const token of live(second, 'anonymous')) await assertRefused(appUrl(second), token);
      for (const token of live(second, 'admin')) await assertWorks(appUrl(second), second, token);
    });

    it("rotates a legacy app's ClientSecret with a grace period (the columns migration 5 added) once finalized: both secrets work", async () => {
      const app = apps[1]!;
      const children = new Children();
      const cli = (args: string[]) => runCli(children, { entry: TESSERA_MAIN, cwd: REPO_ROOT, databaseUrl: store.databaseUrl }, args);
      const rotate = () => cli(['apps', 'rotate-secret', app.appId, '--grace', '600', '--json']);
      try {
        if (storeName === 'postgres') {
          // Instances of the previous release may still serve on it, and would refuse the previous
          // secret at once: a grace period waits for finalization (docs/deployment.md, "Upgrading").
          const waiting = await rotate();
          assert.equal(waiting.code, 1, waiting.stdout);
          assert.match(waiting.stderr, /"errorCode":"CONFLICT".*A rotation with a grace period wait until every instance/);
          const finalized = await cli(['upgrade', 'finalize', '--json']);
          assert.equal(finalized.code, 0, finalized.stderr);
        }
        const rotated = await rotate();
        assert.equal(rotated.code, 0, rotated.stderr);
        const { clientSecret, previousSecretValidUntil } = JSON.parse(rotated.stdout) as {
          clientSecret: string;
          previousSecretValidUntil: string;
        };
        assert.ok(Date.parse(previousSecretValidUntil) > Date.now() + 500_000, previousSecretValidUntil);
        await sleep(1_100); // longer than the server takes to learn of a change made by the CLI
        for (const secret of [app.clientSecret, clientSecret]) {
          const admin = await requestToken(endpoint(app), {
            grant_type: 'client_credentials',
            client_id: app.clientId,
            client_secret: secret,
          });
          assert.equal(admin.status, 200, admin.text);
        }
        const described = await request(appUrl(app), { headers: { authorization: bearer(legacyAdminToken(app)) } });
        assert.equal(described.body.previousSecretValidUntil, previousSecretValidUntil);
      } finally {
        await children.killAll();
      }
    });

    it('stops cleanly (SIGTERM) after the upgrade', async () => {
      const { code } = await terminate(server);
      assert.equal(code, 0, server.stderr());
    });
  });
}
