import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { genuineVerdict, integrityToken, playConsoleKeys } from '../helpers/attestation.js';
import { childrenOfFile, createAppWithCli, runCli, startTessera, type CliResult, type CreatedApp } from '../helpers/fleet.js';
import { anonymousFields, basic, requestToken, whoami } from '../helpers/http.js';
import { REPO_ROOT, TESSERA_BIN, type ServerProcess } from '../helpers/process.js';
import { createTestStore, type TestStore } from '../helpers/store.js';

// `tessera apps configure`, `tessera attestation debug-token …` and `tessera attestation android …`
// as an operator runs them: the real CLI as a process, beside a real server that applies each change.

const children = childrenOfFile();

describe(`tessera attestation, as real processes (${process.env.TEST_STORE ?? 'sqlite'})`, () => {
  let testStore: TestStore;
  let server: ServerProcess;
  let app: CreatedApp;
  const options = () => ({ entry: TESSERA_BIN, cwd: REPO_ROOT, databaseUrl: testStore.databaseUrl });
  const cli = (args: string[]): Promise<CliResult> => runCli(children, options(), args);
  const json = (result: CliResult) => {
    assert.equal(result.code, 0, result.stderr);
    return JSON.parse(result.stdout);
  };
  const target = () => ({ app, appUrl: `${server.baseUrl}/api/apps/${app.appId}` });
  /** The server applies a change within a second: asks until `ok` says it did. */
  const eventually = async (ask: () => Promise<boolean>) => {
    for (let attempt = 0; attempt < 40 && !(await ask()); attempt++) await new Promise((resolve) => setTimeout(resolve, 50));
    assert.ok(await ask());
  };

  before(async () => {
    testStore = await createTestStore();
    server = await startTessera(children, options());
    app = await createAppWithCli(children, options(), 'CLI attestation');
  });
  after(async () => {
    await children.killAll();
    await testStore?.dispose();
  });

  it('apps configure sets fields as the API does, refuses wrong ones with exit 2, and the server enforces at once', async () => {
    const configured = json(
      await cli(['apps', 'configure', app.appId, 'anonymousAttestation=enforce', 'basicAnonymous=false', 'powMaxAttempts=2000', '--json']),
    );
    assert.equal(configured.configuration.anonymousAttestation, 'enforce');
    assert.equal(configured.configuration.basicAnonymous, false);
    assert.equal(configured.configuration.powMaxAttempts, 2000);
    const text = await cli(['apps', 'configure', app.appId, 'powCost=2']);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /Anonymous attestation\s+enforce/);
    assert.match(text.stdout, /Basic anonymous access\s+refused/);
    assert.match(text.stdout, /SHA-256, cost 2, up to 2000 attempts/);
    for (const wrong of [['anonymousAttestation=sometimes'], ['powCost=0'], ['nonsense=1'], ['no-equals']]) {
      const refused = await cli(['apps', 'configure', app.appId, ...wrong]);
      assert.equal(refused.code, 2, `${wrong.join(' ')}: ${refused.stdout}`);
    }
    await eventually(async () => (await requestToken(target(), anonymousFields(target()))).status === 401);
    await eventually(async () => (await whoami(target().appUrl, basic(app.appId))).status === 401);
  });

  it('debug-token create prints the token once; it attests until debug-token revoke', async () => {
    const created = json(await cli(['attestation', 'debug-token', 'create', app.appId, '--name', 'CI', '--json']));
    assert.match(created.token, /^tdbg_/);
    const listed = json(await cli(['attestation', 'debug-token', 'list', app.appId, '--json']));
    assert.deepEqual(
      listed.map((token: { name: string }) => token.name),
      ['CI'],
    );
    assert.equal(JSON.stringify(listed).includes(created.token), false);
    const issued = await requestToken(target(), anonymousFields(target()), { 'x-tessera-attestation': `debug.${created.token}` });
    assert.equal(issued.status, 200, issued.text);
    json(await cli(['attestation', 'debug-token', 'revoke', app.appId, created.id, '--json']));
    const refused = await requestToken(target(), anonymousFields(target()), { 'x-tessera-attestation': `debug.${created.token}` });
    assert.equal(refused.status, 401);
  });

  it('android set reads the Play Console keys from files, show prints fingerprints, remove removes', async () => {
    const keys = playConsoleKeys();
    const folder = mkdtempSync(join(tmpdir(), 'tessera-play-console-'));
    writeFileSync(join(folder, 'decryption.txt'), `${keys.decryptionKey}\n`);
    writeFileSync(join(folder, 'verification.txt'), `${keys.verificationKey}\n`);
    const set = json(
      await cli([
        'attestation',
        'android',
        'set',
        app.appId,
        '--package-name',
        'com.example.cli',
        '--decryption-key-file',
        join(folder, 'decryption.txt'),
        '--verification-key-file',
        join(folder, 'verification.txt'),
        '--json',
      ]),
    );
    assert.equal(set.packageName, 'com.example.cli');
    const shown = await cli(['attestation', 'android', 'show', app.appId]);
    assert.match(shown.stdout, /com\.example\.cli/);
    assert.equal(shown.stdout.includes(keys.decryptionKey), false);
    const token = await integrityToken(keys, genuineVerdict('com.example.cli', Date.now()));
    const issued = await requestToken(target(), anonymousFields(target()), { 'x-tessera-attestation': `android.${token}` });
    assert.equal(issued.status, 200, issued.text);
    json(await cli(['attestation', 'android', 'remove', app.appId, '--json']));
    const missing = await cli(['attestation', 'android', 'show', app.appId]);
    assert.equal(missing.code, 1);
  });
});
