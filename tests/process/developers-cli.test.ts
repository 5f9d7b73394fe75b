import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import Database from 'libsql';
import { anonymousRequest, OPERATOR } from '../../src/request-context.js';
import { openStore } from '../../src/store/open.js';
import { createTessera, type Tessera } from '../../src/tessera.js';
import { childrenOfFile, runCli, type CliResult } from '../helpers/fleet.js';
import { linkTokenOf, PASSWORD } from '../helpers/portal.js';
import { childEnvironment, REPO_ROOT, TESSERA_BIN } from '../helpers/process.js';

// `tessera developers …`, `apps create --owner` and `apps transfer` as an operator runs them: real
// processes on a real SQLite file. What they print is then used the way the portal will use it (the
// same domain services over the same file): a printed link sets a password, the account signs in.

const BIN = TESSERA_BIN;
const TOKEN = /token=([A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43})/;

const children = childrenOfFile();

describe('tessera developers and app owners: the operator CLI, as real processes', () => {
  let dir: string;
  let databaseUrl: string;
  /** The portal's side: the domain services over the same store. */
  let portal: Tessera;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tessera-developers-cli-'));
    databaseUrl = `sqlite:${join(dir, 'tessera.db')}`;
    portal = createTessera({ store: await openStore(databaseUrl) });
  });
  after(async () => {
    await portal?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Every link token any command here printed: none may be in an event. */
  const printedTokens: string[] = [];
  const cli = async (args: string[], env: Record<string, string> = {}) => {
    const result = await runCli(children, { entry: BIN, cwd: REPO_ROOT, databaseUrl, env }, args);
    printedTokens.push(...[...result.stdout.matchAll(new RegExp(TOKEN, 'g'))].map((match) => match[1]!));
    return result;
  };

  /** `tessera ARGS` with `input` on its standard input. */
  const cliWithInput = (args: string[], input: string) =>
    new Promise<CliResult>((resolve, reject) => {
      const child = spawn(process.execPath, [BIN, ...args], {
        cwd: REPO_ROOT,
        env: childEnvironment({ DATABASE_URL: databaseUrl }),
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      children.add(child);
      let stdout = '';
      let stderr = '';
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
      child.on('error', reject).on('close', (code) => resolve({ code, stdout, stderr, exitedAt: Date.now() }));
      child.stdin.end(input);
    });

  const json = (result: CliResult, what: string) => {
    assert.equal(result.code, 0, `${what}: ${result.stderr}`);
    try {
      return JSON.parse(result.stdout);
    } catch {
      assert.fail(`${what} printed no single JSON document: ${result.stdout}`);
    }
  };

  const signIn = (email: string, password: string) =>
    portal.developerSessions.signIn({ email, password, clientAddress: '192.0.2.1' }, anonymousRequest('192.0.2.1'));

  /** The rows of the events and developer_events tables, as the file holds them. */
  const storedEvents = () => {
    const db = new Database(join(dir, 'tessera.db'), { readonly: true });
    try {
      return JSON.stringify([db.prepare('SELECT * FROM developer_events').all(), db.prepare('SELECT * FROM events').all()]);
    } finally {
      db.close();
    }
  };

  it('developers create without a password prints a one-time link (a path without PUBLIC_URL) that sets it, once', async () => {
    const text = await cli(['developers', 'create', '--email', 'Ada@Example.com']);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /Created developer ada@example\.com/);
    assert.match(text.stdout, /^ {2}\/portal\/set-password\?token=[A-Za-z0-9_.-]+$/m);
    assert.match(text.stdout, /set PUBLIC_URL to print the whole link/);
    const token = TOKEN.exec(text.stdout)?.[1];
    assert.ok(token, text.stdout);

    assert.equal((await portal.developers.passwordLinkOwner(token)).email, 'ada@example.com');
    const developer = await portal.developers.setPasswordWithLink(token, PASSWORD, anonymousRequest('192.0.2.1'));
    assert.equal((await signIn('ada@example.com', PASSWORD)).developer.id, developer.id);
    await assert.rejects(portal.developers.setPasswordWithLink(token, PASSWORD, anonymousRequest('192.0.2.1')), { code: 'INVALID_LINK' });
  });

  it('developers create --json prints the account and the whole link with PUBLIC_URL', async () => {
    const created = json(
      await cli(['developers', 'create', '--email', 'bob@example.com', '--json'], { PUBLIC_URL: 'https://tessera.example.com/auth/' }),
      'create --json',
    );
    assert.deepEqual(Object.keys(created).sort(), ['createdAt', 'disabledAt', 'email', 'hasPassword', 'id', 'link']);
    assert.equal(created.email, 'bob@example.com');
    assert.equal(created.hasPassword, false);
    assert.equal(created.link.purpose, 'set_password');
    assert.match(created.link.path, /^\/portal\/set-password\?token=/);
    assert.equal(created.link.url, `https://tessera.example.com/auth${created.link.path}`);
    assert.ok(Date.parse(created.link.expiresAt) > Date.now() + 6 * 86_400_000);
  });

  it('developers create --password-stdin reads the password from standard input, without its line break, and never prints it', async () => {
    const result = await cliWithInput(['developers', 'create', '--email', 'cy@example.com', '--password-stdin', '--json'], `${PASSWORD}\n`);
    const created = json(result, 'create --password-stdin');
    assert.equal(created.hasPassword, true);
    assert.equal(created.link, null);
    assert.ok(!result.stdout.includes(PASSWORD) && !result.stderr.includes(PASSWORD));
    assert.equal((await signIn('cy@example.com', PASSWORD)).developer.email, 'cy@example.com');

    const short = await cliWithInput(['developers', 'create', '--email', 'dee@example.com', '--password-stdin', '--json'], 'too short\n');
    assert.equal(short.code, 1);
    assert.equal(JSON.parse(short.stderr).errorCode, 'invalid_request');
    assert.ok(!short.stderr.includes('too short'), 'the refused password is not repeated');
    const taken = await cliWithInput(['developers', 'create', '--email', 'CY@example.com', '--password-stdin'], `${PASSWORD}\n`);
    assert.equal(taken.code, 1);
    assert.match(taken.stderr, /exists/);
  });

  it('developers list shows every developer, never a password hash', async () => {
    const listed = json(await cli(['developers', 'list', '--json']), 'list --json');
    assert.deepEqual(
      listed.map((developer: { email: string; hasPassword: boolean }) => [developer.email, developer.hasPassword]),
      [
        ['ada@example.com', true],
        ['bob@example.com', false],
        ['cy@example.com', true],
      ],
    );
    const text = await cli(['developers', 'list']);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /bob@example\.com {2}\(no password yet\)/);
    for (const output of [JSON.stringify(listed), text.stdout]) assert.ok(!output.includes('argon2'), output);
  });

  it('developers reset-link prints a link that replaces the earlier ones', async () => {
    const first = json(await cli(['developers', 'reset-link', 'ada@example.com', '--json']), 'reset-link');
    assert.equal(first.email, 'ada@example.com');
    assert.equal(first.purpose, 'reset_password');
    assert.equal(first.url, null);
    const second = await cli(['developers', 'reset-link', 'ADA@example.com']);
    assert.equal(second.code, 0, second.stderr);
    const token = TOKEN.exec(second.stdout)![1]!;
    await assert.rejects(portal.developers.passwordLinkOwner(decodeURIComponent(TOKEN.exec(first.path)![1]!)), { code: 'INVALID_LINK' });
    await portal.developers.setPasswordWithLink(token, 'a brand new password', anonymousRequest('192.0.2.1'));
    await assert.rejects(signIn('ada@example.com', PASSWORD), { code: 'INVALID_CREDENTIALS' });
    await signIn('ada@example.com', 'a brand new password');
  });

  it('apps create --owner gives the new app to a developer; a wrong owner creates nothing', async () => {
    const created = json(await cli(['apps', 'create', '--name', 'Owned', '--owner', 'Cy@example.com', '--json']), 'apps create --owner');
    assert.equal(created.owner.email, 'cy@example.com');
    assert.equal(typeof created.clientSecret, 'string');
    assert.deepEqual(
      (await portal.members.membersOf(created.appId, OPERATOR)).map((member) => [member.email, member.role]),
      [['cy@example.com', 'owner']],
    );
    const text = await cli(['apps', 'create', '--name', 'Owned too', '--owner', 'cy@example.com']);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /^ {2}Owner +cy@example\.com$/m);

    const before = (await portal.apps.list()).length;
    const unknown = await cli(['apps', 'create', '--name', 'Orphan', '--owner', 'nobody@example.com', '--json']);
    assert.equal(unknown.code, 1);
    assert.equal(JSON.parse(unknown.stderr).errorCode, 'DEVELOPER_NOT_FOUND');
    assert.equal((await portal.apps.list()).length, before, 'no app was created');
  });

  it('apps transfer gives an app to another developer; the previous owner is no longer a member', async () => {
    const { appId } = json(await cli(['apps', 'create', '--name', 'Moving', '--owner', 'cy@example.com', '--json']), 'apps create');
    const cy = await portal.developers.find('cy@example.com');
    const ada = await portal.developers.find('ada@example.com');
    const moved = json(await cli(['apps', 'transfer', appId, '--owner', 'ada@example.com', '--json']), 'apps transfer');
    assert.deepEqual(moved, {
      appId,
      owner: { id: ada.id, email: 'ada@example.com' },
      previousOwner: { id: cy.id, email: 'cy@example.com' },
      changed: true,
    });
    assert.deepEqual(
      (await portal.members.membersOf(appId, OPERATOR)).map((member) => member.email),
      ['ada@example.com'],
    );
    // The operator sees who owns it before and after.
    assert.deepEqual(json(await cli(['apps', 'show', appId, '--json']), 'apps show').members, [
      { email: 'ada@example.com', role: 'owner' },
    ]);
    assert.match((await cli(['apps', 'show', appId])).stdout, /Owner +ada@example\.com\n +Collaborators +none/);
    const again = await cli(['apps', 'transfer', appId, '--owner', 'ada@example.com']);
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, /belongs to ada@example\.com already/);
    const missing = await cli(['apps', 'transfer', '0123456789abcdef', '--owner', 'ada@example.com', '--json']);
    assert.equal(missing.code, 1);
    assert.equal(JSON.parse(missing.stderr).errorCode, 'APP_NOT_FOUND');

    // `tessera events --json` prints one event per line, oldest first.
    const listed = await cli(['events', appId, '--json']);
    assert.equal(listed.code, 0, listed.stderr);
    const changes = listed.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { type: string; principal: string; details: Record<string, unknown> })
      .filter((event) => event.type === 'app.owner_changed');
    assert.deepEqual(
      changes.map((event) => [event.principal, event.details.ownerId, event.details.previousOwnerId]),
      [
        ['operator', cy.id, null],
        ['operator', ada.id, cy.id],
      ],
    );
  });

  it('developers disable ends the developer\u2019s sessions and sign-ins; again, it says so; an unknown one fails', async () => {
    const session = await signIn('cy@example.com', PASSWORD);
    const disabled = json(await cli(['developers', 'disable', 'cy@example.com', '--json']), 'disable');
    assert.equal(disabled.changed, true);
    assert.equal(disabled.sessionsEnded, 2);
    assert.ok(disabled.disabledAt);
    assert.equal(await portal.developerSessions.current(session.token), undefined);
    await assert.rejects(signIn('cy@example.com', PASSWORD), { code: 'INVALID_CREDENTIALS' });
    const again = await cli(['developers', 'disable', 'cy@example.com']);
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, /disabled already/);
    const unknown = await cli(['developers', 'disable', 'nobody@example.com', '--json']);
    assert.equal(unknown.code, 1);
    assert.equal(JSON.parse(unknown.stderr).errorCode, 'DEVELOPER_NOT_FOUND');
    const link = await cli(['developers', 'reset-link', 'cy@example.com']);
    assert.equal(link.code, 1);
    assert.match(link.stderr, /disabled/);
  });

  it('records what the operator did as events, with no password and no link token in any of them', async () => {
    const ada = await portal.developers.find('ada@example.com');
    const cy = await portal.developers.find('cy@example.com');
    const events = async (id: string) =>
      (await portal.store.developers.accounts.listEvents(id, 100)).map((event) => [event.type, event.actor]).reverse();
    assert.deepEqual(await events(ada.id), [
      ['developer.created', 'operator'],
      ['developer.link_issued', 'operator'],
      ['developer.password_set', 'developer'],
      ['developer.signed_in', 'developer'],
      ['developer.link_issued', 'operator'],
      ['developer.link_issued', 'operator'],
      ['developer.password_set', 'developer'],
      ['developer.signed_in', 'developer'],
    ]);
    assert.deepEqual((await events(cy.id)).slice(0, 1).concat((await events(cy.id)).slice(-1)), [
      ['developer.created', 'operator'],
      ['developer.disabled', 'operator'],
    ]);
    assert.equal(new Set(printedTokens).size, 4, 'the set-password links of ada and bob, and two reset links of ada');
    const stored = storedEvents();
    for (const secret of [PASSWORD, 'a brand new password', ...printedTokens.map((token) => token.split('.')[1]!)]) {
      assert.ok(!stored.includes(secret), `an event holds a secret: ${secret.slice(0, 6)}…`);
    }
    assert.ok(!stored.includes('argon2'), 'an event holds a password hash');
  });

  it('apps delete tells each member of the app, in its account log, that the operator deleted it', async () => {
    const { appId } = json(await cli(['apps', 'create', '--name', 'Short-lived', '--owner', 'ada@example.com', '--json']), 'apps create');
    const bob = await portal.developers.find('bob@example.com');
    const invitation = await portal.members.invite(appId, bob.email, OPERATOR);
    await portal.members.acceptInvitation(linkTokenOf(invitation.path), bob, {
      clientAddress: '192.0.2.1',
      by: { kind: 'developer', developerId: bob.id },
    });
    json(await cli(['apps', 'delete', appId, '--json']), 'apps delete');

    for (const [email, role] of [
      ['ada@example.com', 'owner'],
      ['bob@example.com', 'collaborator'],
    ] as const) {
      const developer = await portal.developers.find(email);
      const [newest] = await portal.store.developers.accounts.listEvents(developer.id, 1);
      assert.deepEqual(
        newest && [newest.type, newest.actor, newest.clientAddress, newest.details],
        ['developer.app_deleted', 'operator', null, { appId, name: 'Short-lived', role }],
        email,
      );
    }
  });

  it('refuses wrong usage with exit 2 and says how to use it', async () => {
    for (const args of [
      ['developers'],
      ['developers', 'create'],
      ['developers', 'create', 'ada@example.com'],
      ['developers', 'create', '--email', 'x@example.com', 'extra'],
      ['developers', 'list', '--email', 'x@example.com'],
      ['developers', 'list', 'extra'],
      ['developers', 'disable'],
      ['developers', 'disable', 'a@example.com', 'b@example.com'],
      ['developers', 'reset-link', '--password-stdin', 'a@example.com'],
      ['developers', 'frobnicate'],
      ['developers', 'create', '--email', 'a@example.com', '--email', 'b@example.com'],
      ['apps', 'transfer', '0123456789abcdef'],
      ['apps', 'transfer', '--owner', 'ada@example.com'],
      ['apps', 'list', '--owner', 'ada@example.com'],
      ['apps', 'delete', '0123456789abcdef', '--owner', 'ada@example.com'],
    ]) {
      const result = await cli([...args, '--json']);
      assert.equal(result.code, 2, `${args.join(' ')}: ${result.stdout}${result.stderr}`);
      assert.equal(JSON.parse(result.stderr).errorCode, 'USAGE', args.join(' '));
    }
    const help = await cli(['--help']);
    for (const verb of [
      'developers create --email EMAIL [--password-stdin]',
      'developers list',
      'developers disable EMAIL',
      'developers reset-link EMAIL',
      'apps transfer APP_ID --owner EMAIL',
      '--owner EMAIL',
    ]) {
      assert.ok(help.stdout.includes(verb), `help lacks ${verb}`);
    }
  });
});
