import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CLIENT_SECRET_PATTERN } from '../../src/apps/secret-format.js';
import {
  childrenOfFile,
  createAppWithCli,
  runCli,
  startTessera,
  tokenRequest,
  whoami,
  type CreatedApp,
  type CliResult,
} from '../helpers/fleet.js';
import { REPO_ROOT, TESSERA_BIN, type ServerProcess } from '../helpers/process.js';
import { createTestStore, type TestStore } from '../helpers/store.js';

// `tessera credentials create|list|rotate|revoke` as an operator runs them: the real CLI as a
// process, on the store TEST_STORE names, beside a real server that learns of each change by the
// store's change signal.

const children = childrenOfFile();

describe(`tessera credentials, as real processes (${process.env.TEST_STORE ?? 'sqlite'})`, () => {
  let testStore: TestStore;
  let server: ServerProcess;
  let app: CreatedApp;

  const options = () => ({ entry: TESSERA_BIN, cwd: REPO_ROOT, databaseUrl: testStore.databaseUrl });
  const cli = (args: string[]): Promise<CliResult> => runCli(children, options(), args);
  const json = (result: CliResult) => {
    assert.equal(result.code, 0, result.stderr);
    return JSON.parse(result.stdout);
  };

  before(async () => {
    testStore = await createTestStore();
    server = await startTessera(children, options());
    app = await createAppWithCli(children, options(), 'CLI credentials');
  });
  after(async () => {
    await children.killAll();
    await testStore?.dispose();
  });

  it('create --json prints the credential with its secret once; the server issues scoped tokens from it at once', async () => {
    const created = json(
      await cli([
        'credentials',
        'create',
        app.appId,
        '--name',
        'Analytics worker',
        '--scope',
        'events:read',
        '--scope',
        'reports:read',
        '--expires-at',
        '2031-06-30T12:00:00+02:00',
        '--allow-from',
        '127.0.0.0/8',
        '--allow-from',
        '::1',
        '--json',
      ]),
    );
    assert.match(created.clientId, /^tcl_[0-9a-f]{24}$/);
    assert.match(created.clientSecret, CLIENT_SECRET_PATTERN);
    assert.equal(created.name, 'Analytics worker');
    assert.deepEqual(created.scopes, ['events:read', 'reports:read']);
    assert.equal(created.expiresAt, '2031-06-30T10:00:00.000Z');
    assert.deepEqual(created.allowFrom, ['127.0.0.0/8', '::1/128']);
    assert.equal(created.createdBy, 'operator');

    const issued = await tokenRequest(server.baseUrl, app.appId, created.clientId, created.clientSecret);
    assert.equal(issued.status, 200, issued.text);
    assert.equal(issued.body.scope, 'events:read reports:read');
    assert.equal((await whoami(server.baseUrl, app.appId, issued.body.access_token)).body.clientId, created.clientId);

    const listed = json(await cli(['credentials', 'list', app.appId, '--json']));
    assert.equal(listed.length, 1);
    assert.equal(listed[0].clientId, created.clientId);
    assert.equal(listed[0].clientSecret, undefined);
    const text = await cli(['credentials', 'list', app.appId]);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /Analytics worker/);
    assert.ok(!text.stdout.includes(created.clientSecret), 'a list never shows a secret');

    const rotated = json(await cli(['credentials', 'rotate', app.appId, created.clientId, '--grace', '600', '--json']));
    assert.match(rotated.clientSecret, CLIENT_SECRET_PATTERN);
    assert.notEqual(rotated.clientSecret, created.clientSecret);
    assert.equal(
      (await tokenRequest(server.baseUrl, app.appId, created.clientId, created.clientSecret)).status,
      200,
      'in its grace period',
    );
    // The new secret works once the server hears of the rotation: within a second.
    const heard = performance.now() + 1_000;
    let rotatedWorks = false;
    while (!rotatedWorks && performance.now() < heard) {
      rotatedWorks = (await tokenRequest(server.baseUrl, app.appId, created.clientId, rotated.clientSecret)).status === 200;
    }
    assert.ok(rotatedWorks, 'the new secret works within a second of the rotation');

    const revoked = json(await cli(['credentials', 'revoke', app.appId, created.clientId, '--json']));
    assert.equal(revoked.clientId, created.clientId);
    assert.ok(revoked.tokensRevoked >= 2, JSON.stringify(revoked));
    // Each refused within a second of the change: the token at once if the server reads it from the
    // store, the secret when the server's change poll drops the app it cached with the credential.
    const deadline = performance.now() + 1_000;
    let tokenRefused = false;
    let secretRefused = false;
    while (!(tokenRefused && secretRefused) && performance.now() < deadline) {
      tokenRefused ||= (await whoami(server.baseUrl, app.appId, issued.body.access_token)).status === 401;
      secretRefused ||= (await tokenRequest(server.baseUrl, app.appId, created.clientId, rotated.clientSecret)).status === 401;
    }
    assert.ok(tokenRefused, 'the running server refuses the credential\u2019s token within a second');
    assert.ok(secretRefused, 'the running server refuses the credential\u2019s secret within a second');
  });

  it('refuses bad input with exit 1 naming the field, and wrong usage with exit 2; nothing is stored', async () => {
    const bad = [
      ['--name', 'x', '--scope', 'tokens:delete'],
      ['--name', 'x', '--scope', 'events:read', '--allow-from', '10.0.0.1/8'],
      ['--name', 'x', '--scope', 'events:read', '--expires-at', '2001-01-01T00:00:00Z'],
      ['--name', 'x'],
    ];
    for (const flags of bad) {
      const result = await cli(['credentials', 'create', app.appId, ...flags, '--json']);
      assert.equal(result.code, 1, result.stderr);
      assert.equal(JSON.parse(result.stderr).errorCode, 'invalid_request');
    }
    assert.equal((await cli(['credentials', 'create', app.appId, '--scope', 'events:read', '--grace', '5'])).code, 2);
    assert.equal((await cli(['credentials', 'rotate', app.appId])).code, 2);
    assert.equal((await cli(['credentials', 'revoke', app.appId, 'tcl_000000000000000000000000'])).code, 1);
    assert.deepEqual(json(await cli(['credentials', 'list', app.appId, '--json'])), []);
  });
});
