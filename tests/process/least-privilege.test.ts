import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import {
  adminTokenRequest,
  anonymousTokenRequest,
  call,
  Children,
  runCli,
  terminate,
  whoami,
  type CliResult,
  type CreatedApp,
} from '../helpers/fleet.js';
import { appUrlOf, bearer } from '../helpers/http.js';
import { REPO_ROOT, startServerProcess, TESSERA_MAIN, type ServerProcess } from '../helpers/process.js';
import { POSTGRES_ADMIN_URL } from '../helpers/store.js';

// The roles of docs/deployment.md ("Database roles"), made by running its SQL block as it is (with
// role and database names of the test's own): the owner migrates, and `tessera serve` runs as a
// role with only the grants listed there, and serves every feature. A role that lacks one is told
// which at start-up; a serving role asked to migrate is told to run `tessera migrate`.

/** The ```sql block under "### Database roles", split at `\connect`: what runs as a superuser, then in the new database. */
function documentedRoles(owner: string, serving: string, database: string): { cluster: string; inDatabase: string } {
  const doc = readFileSync(join(REPO_ROOT, 'docs', 'deployment.md'), 'utf8');
  const section = doc.slice(doc.indexOf('### Database roles'));
  const block = /```sql\n([\s\S]*?)```/.exec(section)?.[1];
  assert.ok(block !== undefined, 'docs/deployment.md has a ```sql block under "Database roles"');
  const named = block
    .replaceAll('tessera_owner', owner)
    .replace(/CREATE DATABASE tessera\b/, `CREATE DATABASE ${database}`)
    .replace(/\\connect tessera\b/, '\\connect')
    .replace(/\btessera\b/g, serving);
  const [cluster, inDatabase] = named.split('\\connect') as [string, string];
  return { cluster, inDatabase };
}

function urlAs(role: string, database: string): string {
  const url = new URL(POSTGRES_ADMIN_URL);
  url.username = role;
  url.password = '';
  url.pathname = `/${database}`;
  return url.toString();
}

async function asSuperuser(database: string, sql: string): Promise<void> {
  const url = new URL(POSTGRES_ADMIN_URL);
  url.pathname = `/${database}`;
  const client = new pg.Client({ connectionString: url.toString() });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

describe('tessera serve as a role with only the documented grants, after tessera migrate as the owner (PostgreSQL)', () => {
  const suffix = randomBytes(4).toString('hex');
  const [owner, serving, database] = [`tessera_owner_${suffix}`, `tessera_serving_${suffix}`, `tessera_roles_${suffix}`];
  const children = new Children();
  let server: ServerProcess | undefined;
  const ownerUrl = urlAs(owner, database);
  const servingUrl = urlAs(serving, database);
  const cli = (url: string, args: string[]): Promise<CliResult> =>
    runCli(children, { entry: TESSERA_MAIN, cwd: REPO_ROOT, databaseUrl: url }, args);
  const serve = () =>
    startServerProcess({
      entry: TESSERA_MAIN,
      cwd: REPO_ROOT,
      env: { DATABASE_URL: servingUrl, RATE_LIMITS: 'off', HOUSEKEEPING_INTERVAL_SECONDS: '1' },
    });

  before(async () => {
    const { cluster, inDatabase } = documentedRoles(owner, serving, database);
    const base = new URL(POSTGRES_ADMIN_URL).pathname.slice(1);
    // CREATE DATABASE may not run in a transaction: one statement at a time.
    for (const statement of cluster
      .split(';')
      .map((part) => part.trim())
      .filter((part) => part !== '')) {
      await asSuperuser(base, statement);
    }
    await asSuperuser(database, inDatabase);
  });

  after(async () => {
    if (server !== undefined) await terminate(server).catch(() => {});
    await children.killAll();
    const base = new URL(POSTGRES_ADMIN_URL).pathname.slice(1);
    await asSuperuser(base, `DROP DATABASE IF EXISTS ${database} WITH (FORCE)`).catch(() => {});
    for (const role of [serving, owner]) await asSuperuser(base, `DROP ROLE IF EXISTS ${role}`).catch(() => {});
  });

  it('refuses to serve on a schema its role may not create, naming tessera migrate', async () => {
    await assert.rejects(serve(), (error: Error) => {
      assert.match(
        error.message,
        /The database's schema lacks migrations 1, 2, .* of Tessera \d+\.\d+\.\d+, and this database role may not make them \(permission denied for schema public\)/,
      );
      assert.match(error.message, /Run `tessera migrate` as the role that owns the schema/);
      return true;
    });
  });

  it('migrates as the owner: --dry-run lists what is pending and applies nothing, then it applies them', async () => {
    const dryRun = await cli(ownerUrl, ['migrate', '--dry-run', '--json']);
    assert.equal(dryRun.code, 0, dryRun.stderr);
    const planned = JSON.parse(dryRun.stdout) as { applied: unknown[]; pending: number[]; appliedNow: number[]; dryRun: boolean };
    assert.deepEqual(
      { applied: planned.applied, appliedNow: planned.appliedNow, dryRun: planned.dryRun },
      { applied: [], appliedNow: [], dryRun: true },
    );
    assert.ok(planned.pending.length >= 12);
    const again = await cli(ownerUrl, ['migrate', '--dry-run', '--json']);
    assert.deepEqual((JSON.parse(again.stdout) as { pending: number[] }).pending, planned.pending, 'a dry run applied nothing');

    const migrated = await cli(ownerUrl, ['migrate']);
    assert.equal(migrated.code, 0, migrated.stderr);
    assert.match(migrated.stdout, new RegExp(`Applied now: ${planned.pending.join(', ')}\\.`));
    const upToDate = await cli(ownerUrl, ['migrate']);
    assert.match(upToDate.stdout, /Pending: none: the schema is up to date\./);
  });

  it('serves every feature as the serving role', async () => {
    server = await serve();
    const created = await cli(servingUrl, ['apps', 'create', '--name', 'Least privilege', '--json']);
    assert.equal(created.code, 0, created.stderr);
    const app = JSON.parse(created.stdout) as CreatedApp;
    const appUrl = appUrlOf(server.baseUrl, app.appId);
    const expectOk = (outcome: { status: number; text: string }, what: string, status = 200) =>
      assert.equal(outcome.status, status, `${what}: ${outcome.text}`);

    const admin = await adminTokenRequest(server.baseUrl, app);
    expectOk(admin, 'admin token');
    const adminToken = admin.body.access_token as string;
    const asAdmin = { authorization: bearer(adminToken), 'content-type': 'application/json' };
    const anonymous = await anonymousTokenRequest(server.baseUrl, app);
    expectOk(anonymous, 'anonymous token');
    expectOk(await whoami(server.baseUrl, app.appId, anonymous.body.access_token as string), 'whoami');
    expectOk(await whoami(server.baseUrl, app.appId, undefined), 'Basic anonymous');
    const introspected = await call(`${appUrl}/oauth2/introspect`, {
      method: 'POST',
      headers: asAdmin,
      body: JSON.stringify({ token: adminToken }),
    });
    expectOk(introspected, 'introspection');
    const revoked = await call(`${appUrl}/oauth2/revoke`, {
      method: 'POST',
      headers: asAdmin,
      body: JSON.stringify({ token: anonymous.body.access_token as string }),
    });
    expectOk(revoked, 'RFC 7009 revocation');
    expectOk(
      await call(`${appUrl}/configuration`, {
        method: 'PATCH',
        headers: { ...asAdmin, 'content-type': 'application/merge-patch+json' },
        body: JSON.stringify({ requireAppKey: true }),
      }),
      'configuration',
    );
    const credential = await call(`${appUrl}/credentials`, {
      method: 'POST',
      headers: asAdmin,
      body: JSON.stringify({ name: 'reader', scopes: ['events:read'] }),
    });
    expectOk(credential, 'a credential', 201);
    const scoped = await adminTokenRequest(server.baseUrl, {
      appId: app.appId,
      clientId: credential.body.clientId as string,
      clientSecret: credential.body.clientSecret as string,
    });
    expectOk(scoped, "a credential's token");
    expectOk(await call(`${appUrl}/events?limit=10`, { headers: { authorization: bearer(scoped.body.access_token as string) } }), 'events');
    const counts = await call(`${appUrl}/events/counts?per=hour&since=${new Date(Date.now() - 86_400_000).toISOString()}`, {
      headers: { authorization: bearer(adminToken) },
    });
    expectOk(counts, 'event counts');
    // Written by this role first (the read writes the buffer), with their batch's number (event_count_writers).
    const totals = (counts.body as { totals: { type: string; count: number }[] }).totals;
    assert.ok(
      totals.some((total) => total.type === 'token.issued' && total.count > 0),
      `the counts of the tokens issued: ${counts.text}`,
    );
    expectOk(
      await call(`${appUrl}/tokens?kind=anonymous`, { method: 'DELETE', headers: { authorization: bearer(adminToken) } }),
      'revoke-all',
    );
    for (const args of [
      ['apps', 'rotate-secret', app.appId, '--grace', '60', '--json'],
      ['apps', 'end-previous-secret', app.appId, '--json'],
      ['keys', 'rotate', '--json'],
      ['developers', 'create', '--email', `dev-${suffix}@example.com`, '--json'],
      ['tokens', 'revoke-all', app.appId, '--kind', 'admin', '--json'],
      ['upgrade', 'status', '--json'],
      ['events', app.appId, '--json'],
    ]) {
      const result = await cli(servingUrl, args);
      assert.equal(result.code, 0, `tessera ${args.join(' ')}: ${result.stderr}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 1_500)); // a round of housekeeping, and a heartbeat
    const { code } = await terminate(server);
    const output = server.stdout() + server.stderr();
    server = undefined;
    assert.equal(code, 0);
    assert.doesNotMatch(output, /permission denied|"level":50/i, 'nothing failed for want of a grant, in housekeeping and heartbeats too');
  });

  it('names the grant a role lacks at start-up, rather than answering 500 later', async () => {
    await asSuperuser(
      database,
      `REVOKE DELETE ON tokens FROM ${serving}; REVOKE UPDATE ON event_count_writers FROM ${serving}; REVOKE UPDATE ON upgrade_state FROM ${serving}`,
    );
    await assert.rejects(serve(), (error: Error) => {
      assert.match(
        error.message,
        new RegExp(`the database role "${serving}" lacks DELETE on tokens; UPDATE on event_count_writers; UPDATE on upgrade_state\\.`),
      );
      assert.match(error.message, /docs\/deployment\.md/);
      return true;
    });
  });
});
