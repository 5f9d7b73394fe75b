import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { MAX_LISTED_PROBLEMS } from '../../src/apps/import.js';
import { SHOWN_IMPORT_PROBLEMS } from '../../src/cli/apps.js';
import { OPERATOR } from '../../src/request-context.js';
import { createTessera, type Tessera } from '../../src/tessera.js';
import { childrenOfFile, runCli, type CliResult } from '../helpers/fleet.js';
import { REPO_ROOT, TESSERA_BIN } from '../helpers/process.js';
import { createTestStore, type TestStore } from '../helpers/store.js';

// `tessera apps import` for an operator who runs it more than once: `--dry-run` checks and counts
// but writes nothing; `--skip-existing` skips an app stored already with the same four keys, and
// still refuses the whole file for one whose AppID or ClientID is stored with other keys; a refusal
// prints its first problems and counts the rest. The real CLI as a process, on the store TEST_STORE
// names.

const children = childrenOfFile();

function hex(bytes: number): string {
  return randomBytes(bytes).toString('hex');
}

interface Line {
  name: string;
  appId: string;
  appKey: string;
  clientId: string;
  clientSecret: string;
  owner?: string;
}

function appLine(name: string, appIdBytes = 4): Line {
  return { name, appId: hex(appIdBytes), appKey: hex(16), clientId: hex(16), clientSecret: hex(32) };
}

const jsonLines = (lines: readonly Line[]) => lines.map((line) => JSON.stringify(line)).join('\n');

describe(`tessera apps import --dry-run and --skip-existing (${process.env.TEST_STORE ?? 'sqlite'})`, () => {
  let testStore: TestStore;
  let tessera: Tessera;
  let dir: string;
  const ownerEmail = `owner-${hex(4)}@example.com`;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tessera-import-again-'));
    testStore = await createTestStore();
    tessera = createTessera({ store: testStore.store });
    await tessera.developers.create(ownerEmail, null, OPERATOR);
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

  const stored = async (appId: string) => tessera.store.apps.findById(appId);
  const appCount = () => tessera.store.apps.count();
  const ownerEvents = async (appId: string) => (await tessera.events.list(appId, { type: 'app.owner_changed', limit: 10 })).events;

  /** `apps import FILE --json ARGS` that must succeed: its summary. */
  const importJson = async (file: string, ...args: string[]) => {
    const result = await cli(['apps', 'import', file, '--json', ...args]);
    assert.equal(result.code, 0, result.stderr);
    return JSON.parse(result.stdout) as Record<string, unknown>;
  };

  it('--dry-run checks and counts, and writes nothing: no app, no owner, no event', async () => {
    const apps = [appLine('Dry one'), { ...appLine('Dry owned', 8), owner: ownerEmail }, appLine('Dry three')];
    const file = fileOf(jsonLines(apps));
    const before = await appCount();

    const text = await cli(['apps', 'import', file, '--dry-run']);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /^Dry run of .*; nothing was written\. It would import 3 app\(s\)/);
    assert.match(text.stdout, /\n {2}3 to import, 0 skipped/);
    assert.match(text.stdout, /1 app\(s\) would be given an owner/);

    assert.deepEqual(await importJson(file, '--dry-run'), {
      imported: 3,
      skipped: 0,
      dryRun: true,
      lines: 3,
      blankLines: 0,
      owned: 1,
      establishedFormat: 2,
      tesseraFormat: 1,
    });
    assert.equal(await appCount(), before);
    for (const app of apps) {
      assert.equal(await stored(app.appId), undefined);
      assert.deepEqual(await ownerEvents(app.appId), []);
    }

    // Then for real: the same counts, written.
    assert.deepEqual(await importJson(file), {
      imported: 3,
      skipped: 0,
      dryRun: false,
      lines: 3,
      blankLines: 0,
      owned: 1,
      establishedFormat: 2,
      tesseraFormat: 1,
    });
    assert.equal(await appCount(), before + 3);
    assert.equal((await ownerEvents(apps[1]!.appId)).length, 1);
  });

  it('--dry-run of a file with problems: refused as the import would be (exit 1), and nothing written, not even the good lines', async () => {
    const good = appLine('Good');
    const file = fileOf(jsonLines([good, { ...appLine('Bad'), appKey: 'not hex' }]));
    const before = await appCount();
    const text = await cli(['apps', 'import', file, '--dry-run']);
    assert.equal(text.code, 1, text.stdout);
    assert.equal(text.stdout, '');
    assert.match(text.stderr, /^tessera: line 2: appKey "not hex" must be/m);
    assert.match(text.stderr, /The import would be refused, nothing imported: 1 of the 2 lines have problems/);
    const json = await cli(['apps', 'import', file, '--dry-run', '--json']);
    assert.equal(json.code, 1);
    const refusal = JSON.parse(json.stderr);
    assert.equal(refusal.errorCode, 'IMPORT_REFUSED');
    assert.equal(refusal.dryRun, true);
    assert.deepEqual(
      refusal.problems.map((problem: { line: number }) => problem.line),
      [2],
    );
    assert.equal(await appCount(), before);
    assert.equal(await stored(good.appId), undefined);
  });

  it('the same import twice: refused the second time, unless --skip-existing, which counts 0 imported and N skipped and changes nothing', async () => {
    const apps = [appLine('Twice one'), { ...appLine('Twice owned', 8), owner: ownerEmail }, appLine('Twice three')];
    const file = fileOf(`${jsonLines(apps)}\n`);
    assert.equal((await importJson(file)).imported, 3);
    const first = await Promise.all(apps.map((app) => stored(app.appId)));
    const count = await appCount();

    const again = await cli(['apps', 'import', file]);
    assert.equal(again.code, 1, again.stdout);
    const named = [
      ...again.stderr.matchAll(
        /^tessera: line (\d+): appId "[0-9a-f]+" is in the store already, with the same keys: --skip-existing skips such apps\.$/gm,
      ),
    ];
    assert.deepEqual(
      named.map((match) => Number(match[1])),
      [1, 2, 3],
      again.stderr,
    );

    const skipped = await cli(['apps', 'import', file, '--skip-existing']);
    assert.equal(skipped.code, 0, skipped.stderr);
    assert.match(skipped.stdout, /^Imported 0 app\(s\)/);
    assert.match(skipped.stdout, /\n {2}0 imported, 3 skipped \(in the store already with the same keys, and left as they are\)\./);
    assert.deepEqual(await importJson(file, '--skip-existing'), {
      imported: 0,
      skipped: 3,
      dryRun: false,
      lines: 3,
      blankLines: 0,
      owned: 0,
      establishedFormat: 0,
      tesseraFormat: 0,
    });
    // Left exactly as they were: the same admin ids, no second owner event.
    assert.equal(await appCount(), count);
    assert.deepEqual(await Promise.all(apps.map((app) => stored(app.appId))), first);
    assert.equal((await ownerEvents(apps[1]!.appId)).length, 1);

    // With new apps added to the file: only they are imported; a dry run says so first.
    const added = [appLine('Added one'), appLine('Added two', 8)];
    const grown = fileOf(jsonLines([...apps, ...added]));
    const dry = await importJson(grown, '--skip-existing', '--dry-run');
    assert.deepEqual([dry.imported, dry.skipped, dry.dryRun], [2, 3, true]);
    assert.equal(await appCount(), count);
    const real = await importJson(grown, '--skip-existing');
    assert.deepEqual([real.imported, real.skipped, real.establishedFormat, real.tesseraFormat], [2, 3, 1, 1]);
    assert.equal(await appCount(), count + 2);
    for (const app of added) assert.equal((await stored(app.appId))?.name, app.name);
  });

  it('--skip-existing still refuses the whole file when an AppID or ClientID is stored with other keys, and says which', async () => {
    // Each line of the file below has an AppID or a ClientID of its own: a key on two lines is a problem of the file's.
    const [same, otherKey, otherSecret, otherClientId, otherBoth, holder, otherHolder, rotated] = [
      'Same',
      'Other AppKey',
      'Other ClientSecret',
      'Other ClientID',
      'Other ClientID, held by another app',
      'Holds a ClientID',
      'Holds another ClientID',
      'Rotated since',
    ].map((name) => appLine(name)) as [Line, Line, Line, Line, Line, Line, Line, Line];
    const existing = [same, otherKey, otherSecret, otherClientId, otherBoth, holder, otherHolder, rotated];
    assert.equal((await importJson(fileOf(jsonLines(existing)))).imported, existing.length);
    // Its ClientSecret rotated since: the file's is no longer the app's.
    const rotation = await cli(['apps', 'rotate-secret', rotated.appId, '--json']);
    assert.equal(rotation.code, 0, rotation.stderr);

    const newApp = appLine('New');
    const lines: Line[] = [
      newApp, // 1: fine
      same, // 2: the same keys: skipped
      { ...otherKey, appKey: hex(16) }, // 3
      { ...otherSecret, clientSecret: hex(32) }, // 4
      { ...otherClientId, clientId: hex(16) }, // 5
      { ...appLine('Clash'), clientId: holder.clientId }, // 6: another app's ClientID
      { ...otherBoth, clientId: otherHolder.clientId }, // 7: both
      rotated, // 8: the secret before the rotation
    ];
    const file = fileOf(jsonLines(lines));
    const count = await appCount();
    const result = await cli(['apps', 'import', file, '--skip-existing']);
    assert.equal(result.code, 1, result.stdout);
    const problems = [...result.stderr.matchAll(/^tessera: line (\d+): (.*)$/gm)].map((match) => `${match[1]}: ${match[2]}`);
    const appId = (line: Line) => `appId "${line.appId}" is taken: the app in the store with it has another`;
    assert.deepEqual(problems, [
      `3: ${appId(otherKey)} appKey.`,
      `4: ${appId(otherSecret)} clientSecret.`,
      `5: ${appId(otherClientId)} clientId.`,
      `6: clientId "${holder.clientId}" is taken: the app "${holder.appId}" in the store has it.`,
      `7: ${appId(otherBoth)} clientId.`,
      `7: clientId "${otherHolder.clientId}" is taken: the app "${otherHolder.appId}" in the store has it.`,
      `8: ${appId(rotated)} clientSecret.`,
    ]);
    assert.match(result.stderr, /Nothing was imported: 6 of the 8 lines have problems/);
    for (const line of lines.slice(2)) assert.ok(!result.stderr.includes(line.clientSecret), 'a ClientSecret is never echoed');
    assert.equal(await appCount(), count);
    assert.equal(await stored(newApp.appId), undefined);
  });

  it(`a refusal prints its first ${SHOWN_IMPORT_PROBLEMS} problems and counts the rest; --json lists up to ${MAX_LISTED_PROBLEMS}`, async () => {
    const few = fileOf('{}\n'.repeat(50));
    const text = await cli(['apps', 'import', few]);
    assert.equal(text.code, 1);
    const lines = text.stderr.trimEnd().split('\n');
    assert.equal(lines.length, SHOWN_IMPORT_PROBLEMS + 2, text.stderr);
    assert.deepEqual(
      lines.slice(0, SHOWN_IMPORT_PROBLEMS).map((line) => /^tessera: line (\d+): Missing: /.exec(line)?.[1]),
      Array.from({ length: SHOWN_IMPORT_PROBLEMS }, (_, index) => String(index + 1)),
    );
    assert.equal(lines[SHOWN_IMPORT_PROBLEMS], 'tessera: … and 30 more problem(s); --json lists every one.');
    assert.equal(lines.at(-1), 'tessera: Nothing was imported: 50 of the 50 lines have problems; fix them and run the import again.');
    const json = JSON.parse((await cli(['apps', 'import', few, '--json'])).stderr);
    assert.equal(json.problems.length, 50);
    assert.equal(json.unlistedProblems, 0);

    const many = MAX_LISTED_PROBLEMS + 500;
    const past = await cli(['apps', 'import', fileOf('{}\n'.repeat(many))]);
    assert.equal(past.code, 1);
    assert.equal(past.stderr.trimEnd().split('\n').length, SHOWN_IMPORT_PROBLEMS + 2, past.stderr);
    assert.match(
      past.stderr,
      new RegExp(`… and ${many - SHOWN_IMPORT_PROBLEMS} more problem\\(s\\); --json lists the first ${MAX_LISTED_PROBLEMS}\\.`),
    );
    assert.match(past.stderr, new RegExp(`Nothing was imported: the file has ${many} problems in its ${many} lines`));
  });

  it('refuses --dry-run and --skip-existing for any other command', async () => {
    for (const args of [
      ['apps', 'list', '--dry-run'],
      ['apps', 'export', '--skip-existing'],
    ]) {
      const result = await cli(args);
      assert.equal(result.code, 2, args.join(' '));
      assert.match(result.stderr, /--dry-run and --skip-existing are for tessera apps import/);
    }
  });
});
