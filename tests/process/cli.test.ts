import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import Database from 'libsql';
import { assertError } from '../helpers/assert.js';
import { childrenOfFile, runCli, sleep, terminate, type CliResult } from '../helpers/fleet.js';
import { appUrlOf, basic, bearer, request, requestAs, signingKeyIdOf, tokenRequestInit, type JsonResponse } from '../helpers/http.js';
import { portalClient } from '../helpers/portal-http.js';
import { childEnvironment, REPO_ROOT, startServerProcess, type ServerProcess, TESSERA_BIN } from '../helpers/process.js';

const BIN = TESSERA_BIN;

/** Every child process started here, so that after() hooks can end them whatever happened. */
const children = childrenOfFile();

interface Store {
  dir: string;
  databaseUrl: string;
  dispose(): void;
}

function newStore(): Store {
  const dir = mkdtempSync(join(tmpdir(), 'tessera-cli-test-'));
  return {
    dir,
    databaseUrl: `sqlite:${join(dir, 'tessera.db')}`,
    dispose: () => rmSync(dir, { recursive: true, force: true }),
  };
}

function cli(store: Store, args: string[], extraEnv: Record<string, string> = {}): Promise<CliResult> {
  return runCli(children, { entry: BIN, cwd: REPO_ROOT, databaseUrl: store.databaseUrl, env: extraEnv }, args);
}

function parseJson(text: string, what: string): any {
  try {
    return JSON.parse(text);
  } catch {
    assert.fail(`${what} is not one JSON document: ${JSON.stringify(text)}`);
  }
}

interface CreatedKeys {
  appId: string;
  appKey: string;
  clientId: string;
  clientSecret: string;
  name: string;
}

async function createApp(store: Store, name: string): Promise<CreatedKeys> {
  const result = await cli(store, ['apps', 'create', '--name', name, '--json']);
  assert.equal(result.code, 0, result.stderr);
  return parseJson(result.stdout, 'apps create --json output');
}

/** `./bin/tessera serve` as a child process; resolves once it listens. */
async function serve(store: Store, extraEnv: Record<string, string>): Promise<ServerProcess> {
  const server = await startServerProcess({ entry: BIN, cwd: REPO_ROOT, env: { DATABASE_URL: store.databaseUrl, ...extraEnv } });
  children.add(server.child);
  return server;
}

function tokenRequest(baseUrl: string, appId: string, clientId: string, clientSecret: string): Promise<JsonResponse> {
  const fields = { grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret };
  return request(`${appUrlOf(baseUrl, appId)}/oauth2/token`, tokenRequestInit(appId, fields));
}

/**
 * Sends `attempt` every 50 ms until `done` holds for its response, for at most `withinMs`. Returns
 * the last response and how long it took; the caller asserts both.
 */
async function pollUntil(
  attempt: () => Promise<JsonResponse>,
  done: (response: JsonResponse) => boolean,
  withinMs = 1_000,
): Promise<{ response: JsonResponse; elapsed: number }> {
  const started = Date.now();
  for (;;) {
    const response = await attempt();
    const elapsed = Date.now() - started;
    if (done(response) || elapsed >= withinMs) return { response, elapsed };
    await sleep(50);
  }
}

describe('tessera apps: the operator CLI, as a real process', () => {
  const store = newStore();
  after(async () => {
    await children.killAll();
    store.dispose();
  });

  it('apps create --json prints exactly one JSON object with the four keys and the name', async () => {
    const result = await cli(store, ['apps', 'create', '--name', 'Json app', '--json']);
    assert.equal(result.code, 0, result.stderr);
    const created = parseJson(result.stdout, 'stdout');
    assert.equal(typeof created, 'object');
    assert.ok(created !== null && !Array.isArray(created));
    for (const key of ['appId', 'appKey', 'clientId', 'clientSecret', 'name']) {
      assert.equal(typeof created[key], 'string', `${key} in ${result.stdout}`);
      assert.ok(created[key].length > 0, key);
    }
    assert.equal(created.name, 'Json app');
    assert.match(created.appId, /^[A-Za-z0-9_-]+$/);
    assert.match(created.clientId, /^[A-Za-z0-9_-]+$/);
    assert.notEqual(created.appId, created.clientId);
    // At least 256 bits: 43 base64url or 64 hex characters. A hex secret is checked as hex.
    assert.ok(/^[0-9a-f]+$/.test(created.clientSecret) ? created.clientSecret.length >= 64 : created.clientSecret.length >= 43);
  });

  it('apps create (text) prints AppID, AppKey, ClientID and ClientSecret, matching the stored app', async () => {
    const result = await cli(store, ['apps', 'create', '--name', 'Text app']);
    assert.equal(result.code, 0, result.stderr);
    const value = (label: string) => {
      const match = new RegExp(`^\\s*${label}\\s*:?\\s+(\\S+)\\s*$`, 'm').exec(result.stdout);
      assert.ok(match, `no ${label} in ${result.stdout}`);
      return match[1]!;
    };
    const keys = { appId: value('AppID'), appKey: value('AppKey'), clientId: value('ClientID'), clientSecret: value('ClientSecret') };
    const shown = await cli(store, ['apps', 'show', keys.appId, '--json']);
    assert.equal(shown.code, 0, shown.stderr);
    const app = parseJson(shown.stdout, 'apps show --json output');
    assert.equal(app.appId, keys.appId);
    assert.equal(app.appKey, keys.appKey);
    assert.equal(app.clientId, keys.clientId);
    assert.equal(app.name, 'Text app');
    assert.ok(!shown.stdout.includes(keys.clientSecret));
  });

  it('apps list shows every app, never a ClientSecret', async () => {
    const [one, two] = await Promise.all([createApp(store, 'List one'), createApp(store, 'List two')]);
    const [json, text] = await Promise.all([cli(store, ['apps', 'list', '--json']), cli(store, ['apps', 'list'])]);
    assert.equal(json.code, 0, json.stderr);
    const apps = parseJson(json.stdout, 'apps list --json output');
    assert.ok(Array.isArray(apps));
    for (const created of [one, two]) {
      const listed: any = apps.find((app: { appId: string }) => app.appId === created.appId);
      assert.ok(listed, `${created.appId} not listed`);
      assert.equal(listed.name, created.name);
      assert.equal(listed.clientId, created.clientId);
      assert.ok(!('clientSecret' in listed));
    }
    assert.equal(text.code, 0, text.stderr);
    for (const created of [one, two]) {
      assert.ok(text.stdout.includes(created.appId), text.stdout);
      assert.ok(text.stdout.includes(created.name), text.stdout);
    }
    for (const output of [json.stdout, text.stdout, json.stderr, text.stderr]) {
      assert.ok(!output.includes(one.clientSecret) && !output.includes(two.clientSecret), 'a ClientSecret was printed');
    }
  });

  it('apps show prints the app without its ClientSecret, as JSON and as text', async () => {
    const created = await createApp(store, 'Show me');
    const [json, text] = await Promise.all([
      cli(store, ['apps', 'show', created.appId, '--json']),
      cli(store, ['apps', 'show', created.appId]),
    ]);
    assert.equal(json.code, 0, json.stderr);
    const app = parseJson(json.stdout, 'apps show --json output');
    assert.equal(app.appId, created.appId);
    assert.equal(app.name, 'Show me');
    assert.equal(app.appKey, created.appKey);
    assert.equal(app.clientId, created.clientId);
    // The one field that names the secret is an instant (until when a rotated secret works).
    assert.equal(app.previousSecretValidUntil, null);
    assert.ok(
      !Object.keys(app).some((key) => /secret/i.test(key) && key !== 'previousSecretValidUntil'),
      `fields: ${Object.keys(app).join(', ')}`,
    );
    assert.equal(text.code, 0, text.stderr);
    assert.ok(text.stdout.includes(created.appId) && text.stdout.includes(created.clientId), text.stdout);
    for (const output of [json.stdout, json.stderr, text.stdout, text.stderr]) {
      assert.ok(!output.includes(created.clientSecret), 'the ClientSecret was printed');
    }
  });

  it('apps rotate-secret prints a new ClientSecret once, which apps show never prints again', async () => {
    const created = await createApp(store, 'Rotate me');
    const json = await cli(store, ['apps', 'rotate-secret', created.appId, '--json']);
    assert.equal(json.code, 0, json.stderr);
    const rotated = parseJson(json.stdout, 'apps rotate-secret --json output');
    assert.equal(rotated.appId, created.appId);
    assert.equal(typeof rotated.clientSecret, 'string');
    assert.notEqual(rotated.clientSecret, created.clientSecret);
    assert.equal(rotated.clientSecret.length, created.clientSecret.length);
    assert.ok(!json.stdout.includes(created.clientSecret), 'the old secret was printed');

    const text = await cli(store, ['apps', 'rotate-secret', created.appId]);
    assert.equal(text.code, 0, text.stderr);
    const secrets = text.stdout.match(/\b[0-9A-Za-z_-]{43,}\b/g) ?? [];
    assert.equal(secrets.length, 1, `expected the new secret exactly once in: ${text.stdout}`);
    assert.notEqual(secrets[0], rotated.clientSecret);
    assert.notEqual(secrets[0], created.clientSecret);

    const shown = await cli(store, ['apps', 'show', created.appId, '--json']);
    assert.ok(!shown.stdout.includes(secrets[0]) && !shown.stdout.includes(rotated.clientSecret));
  });

  it('apps delete removes the app; deleting or showing it again fails with exit 1', async () => {
    const [kept, deleted] = await Promise.all([createApp(store, 'Keep me'), createApp(store, 'Delete me')]);
    const result = await cli(store, ['apps', 'delete', deleted.appId, '--json']);
    assert.equal(result.code, 0, result.stderr);
    const answer = parseJson(result.stdout, 'apps delete --json output');
    assert.equal(answer.appId, deleted.appId);

    const [show, again, list] = await Promise.all([
      cli(store, ['apps', 'show', deleted.appId]),
      cli(store, ['apps', 'delete', deleted.appId]),
      cli(store, ['apps', 'list', '--json']),
    ]);
    assert.equal(show.code, 1, show.stderr);
    assert.equal(again.code, 1, again.stderr);
    const ids = parseJson(list.stdout, 'apps list --json output').map((app: { appId: string }) => app.appId);
    assert.ok(!ids.includes(deleted.appId));
    assert.ok(ids.includes(kept.appId));
  });

  it('apps delete (text) confirms in words', async () => {
    const created = await createApp(store, 'Delete me too');
    const result = await cli(store, ['apps', 'delete', created.appId]);
    assert.equal(result.code, 0, result.stderr);
    assert.ok(result.stdout.includes(created.appId), result.stdout);
  });

  it('apps show of an unknown app: exit 1 and a clear message on stderr, nothing on stdout', async () => {
    const result = await cli(store, ['apps', 'show', 'noSuchApp0000000']);
    assert.equal(result.code, 1);
    assert.equal(result.stdout, '');
    assert.match(result.stderr, /app/i);
    assert.match(result.stderr, /no|not|unknown/i);
    assert.ok(!result.stderr.includes('    at '), `a stack trace was printed: ${result.stderr}`);
  });

  it('apps show of an unknown app with --json: exit 1 and one JSON error on stderr', async () => {
    const result = await cli(store, ['apps', 'show', 'noSuchApp0000000', '--json']);
    assert.equal(result.code, 1);
    assert.equal(result.stdout, '');
    const error = parseJson(result.stderr, 'stderr');
    assert.equal(error.errorCode, 'APP_NOT_FOUND');
    assert.equal(typeof error.message, 'string');
    assert.ok(error.message.length > 0);
  });

  it('apps rotate-secret and apps delete of an unknown app: exit 1', async () => {
    const results = await Promise.all([
      cli(store, ['apps', 'rotate-secret', 'noSuchApp0000000', '--json']),
      cli(store, ['apps', 'delete', 'noSuchApp0000000', '--json']),
    ]);
    for (const result of results) {
      assert.equal(result.code, 1, result.stderr);
      assert.equal(result.stdout, '');
      assert.equal(parseJson(result.stderr, 'stderr').errorCode, 'APP_NOT_FOUND');
    }
  });

  for (const [what, args] of [
    ['no command', []],
    ['no verb', ['apps']],
    ['an unknown command', ['frobnicate']],
    ['an unknown verb', ['apps', 'frobnicate']],
    ['apps create without --name', ['apps', 'create']],
    ['--name without a value', ['apps', 'create', '--name']],
    ['an unknown flag', ['apps', 'list', '--bogus']],
    ['a missing APP_ID', ['apps', 'show']],
    ['an extra argument', ['apps', 'show', 'a', 'b']],
    ['events --per without --counts', ['events', '0000000000000000', '--per', 'hour']],
    ['events --counts with --follow', ['events', '0000000000000000', '--counts', '--follow']],
    ['events --counts --per of an unknown period', ['events', '0000000000000000', '--counts', '--per', 'week']],
    ['events --counts --since that is no duration', ['events', '0000000000000000', '--counts', '--since', '1y']],
    ['events --counts --since past 1440 buckets', ['events', '0000000000000000', '--counts', '--per', 'minute', '--since', '25h']],
    ['events --format of an unknown format', ['events', '0000000000000000', '--format', 'xml']],
    ['events --format with --follow', ['events', '0000000000000000', '--format', 'csv', '--follow']],
    ['events --format with --limit', ['events', '0000000000000000', '--format', 'csv', '--limit', '5']],
  ] as const) {
    it(`usage error, ${what}: exit 2 and a message on stderr`, async () => {
      const result = await cli(store, [...args]);
      assert.equal(result.code, 2, `stdout: ${result.stdout}\nstderr: ${result.stderr}`);
      assert.ok((result.stderr + result.stdout).length > 0, 'nothing was printed');
      assert.ok(!result.stderr.includes('    at '), `a stack trace was printed: ${result.stderr}`);
    });
  }

  it('usage error with --json: exit 2, nothing on stdout, one JSON error on stderr', async () => {
    const result = await cli(store, ['apps', 'create', '--json']);
    assert.equal(result.code, 2);
    assert.equal(result.stdout, '');
    const error = parseJson(result.stderr, 'stderr');
    assert.equal(typeof error.errorCode, 'string');
    assert.equal(typeof error.message, 'string');
  });

  it('a DATABASE_URL that names no store: exit 2, a configuration error, for every command and for serve', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tessera-cli-test-'));
    try {
      const runs = ['mysql://operator:hunter2@db.internal/tessera', 'sqlite:', 'https://db.internal/'].flatMap((databaseUrl) =>
        [['apps', 'list', '--json'], ['serve'], ['apps', 'list']].map(async (args) => {
          const result = await runCli(children, { entry: BIN, cwd: dir, databaseUrl, env: { PORT: '0' } }, args);
          return {
            args,
            result,
            what: `DATABASE_URL=${databaseUrl} tessera ${args.join(' ')}: stdout ${result.stdout}, stderr ${result.stderr}`,
          };
        }),
      );
      for (const { args, result, what } of await Promise.all(runs)) {
        assert.equal(result.code, 2, what);
        assert.equal(result.stdout, '', what);
        assert.match(result.stderr, /DATABASE_URL/, what);
        assert.doesNotMatch(result.stderr, /hunter2| {4}at /, what);
        if (args.includes('--json')) assert.equal(parseJson(result.stderr, 'stderr').errorCode, 'CONFIGURATION');
      }
      assert.deepEqual(readdirSync(dir), [], 'a store was created');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('--help: exit 0 and the usage of every verb', async () => {
    for (const args of [['--help'], ['apps', '--help']]) {
      const result = await cli(store, args);
      assert.equal(result.code, 0, result.stderr);
      for (const verb of [
        'serve',
        'apps create',
        'apps list',
        'apps show',
        'apps rotate-secret',
        'apps delete',
        'apps import',
        'apps export',
        'keys list',
        'keys rotate',
        'keys retire',
        'events APP_ID --counts',
      ]) {
        assert.ok(result.stdout.includes(verb), `--help does not mention ${verb}: ${result.stdout}`);
      }
    }
  });
});

describe('app names and the terminal: control characters are refused, and never printed raw', () => {
  const store = newStore();
  after(() => store.dispose());

  /** What a terminal would obey rather than show: Cc, line/paragraph separators, bidi overrides and isolates. */
  const CONTROL_CHARACTER = /[\p{Cc}\u2028\u2029\u202A-\u202E\u2066-\u2069]/u;
  const HOSTILE_NAME = 'Evil\nfffffffffffffff0  2020-01-01T00:00:00.000Z  Fake app\u001b[2J\u001b]0;owned\u0007\u009b31m\u202egnp.exe';

  it('apps create refuses a name with a control character, a separator or a bidi override: exit 1, nothing stored', async () => {
    const names = [
      'two\nlines',
      'red \u001b[31malert',
      'tab\there',
      'bell\u0007',
      'del\u007f',
      'C1 \u009b2J',
      'bidi \u202egnp.exe',
      'isolate \u2066x\u2069',
      'line\u2028separator',
    ];
    const results = await Promise.all(names.map((name) => cli(store, ['apps', 'create', '--name', name, '--json'])));
    for (const [index, result] of results.entries()) {
      assert.equal(result.code, 1, `${JSON.stringify(names[index])}: ${result.stdout} ${result.stderr}`);
      assert.equal(result.stdout, '');
      const error = parseJson(result.stderr, 'stderr');
      assert.equal(error.errorCode, 'invalid_request');
      assert.match(error.message, /control characters/);
    }
    const text = await cli(store, ['apps', 'create', '--name', 'red \u001b[31malert']);
    assert.equal(text.code, 1);
    assert.match(text.stderr, /^tessera: The app name must not contain control characters/);
    const list = await cli(store, ['apps', 'list', '--json']);
    assert.deepEqual(parseJson(list.stdout, 'apps list --json output'), []);
    // Surrounding whitespace is still trimmed, and other Unicode is a name like any other.
    const fine = await createApp(store, '  Café ☕ アプリ  ');
    assert.equal(fine.name, 'Café ☕ アプリ');
  });

  it('a name stored before names were checked is printed escaped by apps list and apps show; --json keeps it exact', async () => {
    const created = await createApp(store, 'Stored long ago');
    const db = new Database(store.databaseUrl.slice('sqlite:'.length));
    try {
      db.prepare('UPDATE apps SET name = :name WHERE app_id = :appId').run({ name: HOSTILE_NAME, appId: created.appId });
    } finally {
      db.close();
    }
    const [list, show, listJson, showJson] = await Promise.all([
      cli(store, ['apps', 'list']),
      cli(store, ['apps', 'show', created.appId]),
      cli(store, ['apps', 'list', '--json']),
      cli(store, ['apps', 'show', created.appId, '--json']),
    ]);
    for (const result of [list, show]) {
      assert.equal(result.code, 0, result.stderr);
      for (const line of result.stdout.replace(/\n$/, '').split('\n')) {
        assert.doesNotMatch(line, CONTROL_CHARACTER, `printed raw: ${JSON.stringify(line)}`);
      }
      assert.ok(result.stdout.includes('Evil\\u000afffffffffffffff0  2020-01-01T00:00:00.000Z  Fake app\\u001b[2J'), result.stdout);
      assert.ok(result.stdout.includes('\\u0007\\u009b31m\\u202egnp.exe'), result.stdout);
    }
    const lines = list.stdout.trim().split('\n');
    assert.equal(lines.length, 2, `one line per app: ${list.stdout}`);
    assert.ok(!lines.some((line) => line.startsWith('fffffffffffffff0')), 'the name forged a line of its own');
    assert.match(show.stdout, /^App "Evil\\u000a/);
    assert.equal(
      parseJson(listJson.stdout, 'apps list --json').find((app: { appId: string }) => app.appId === created.appId).name,
      HOSTILE_NAME,
    );
    assert.equal(parseJson(showJson.stdout, 'apps show --json').name, HOSTILE_NAME);
  });

  it('usage errors show what was typed escaped', async () => {
    const [command, type] = await Promise.all([
      cli(store, ['\u001b[2Jfrobnicate']),
      cli(store, ['events', '0000000000000000', '--type', `\u001b]0;owned\u0007${'x'.repeat(200)}`]),
    ]);
    for (const result of [command, type]) {
      assert.equal(result.code, 2, result.stderr);
      assert.doesNotMatch(result.stderr.replace(/\n$/, ''), CONTROL_CHARACTER, result.stderr);
      // What was typed is cut short; the message also lists the event types.
      assert.ok(result.stderr.length < 600, result.stderr);
    }
    assert.match(command.stderr, /unknown command "\\u001b\[2Jfrobnicate"/);
    assert.match(type.stderr, /Unknown event type "\\u001b\]0;owned\\u0007x+…"/);
  });
});

describe('the CLI and a running server share the store', () => {
  const store = newStore();
  let server: ServerProcess;
  before(async () => {
    server = await serve(store, { DEMO_APP: 'off' });
  });
  after(async () => {
    await children.killAll();
    store.dispose();
  });

  it('an app created with the CLI while the server runs gets tokens at once', async () => {
    const created = await createApp(store, 'Live app');
    const admin = await tokenRequest(server.baseUrl, created.appId, created.clientId, created.clientSecret);
    assert.equal(admin.status, 200, admin.text);
    assert.equal(admin.body.token_type, 'bearer');
    const anonymous = await tokenRequest(server.baseUrl, created.appId, created.appId, created.appKey);
    assert.equal(anonymous.status, 200, anonymous.text);
    assert.equal(anonymous.body.id, 'ANONYMOUS');
    const whoami = await request(`${server.baseUrl}/api/apps/${created.appId}/whoami`, {
      headers: { authorization: bearer(admin.body.access_token) },
    });
    assert.equal(whoami.body?.principal, 'admin', whoami.text);
  });

  it('after apps rotate-secret the old secret gets 401 within 1 s, and the new one works', async () => {
    const created = await createApp(store, 'Rotated while running');
    // The server has the app in its cache now.
    const before = await tokenRequest(server.baseUrl, created.appId, created.clientId, created.clientSecret);
    assert.equal(before.status, 200, before.text);

    const rotated = await cli(store, ['apps', 'rotate-secret', created.appId, '--json']);
    assert.equal(rotated.code, 0, rotated.stderr);
    const newSecret: string = parseJson(rotated.stdout, 'apps rotate-secret --json output').clientSecret;

    const { response, elapsed } = await pollUntil(
      () => tokenRequest(server.baseUrl, created.appId, created.clientId, created.clientSecret),
      (r) => r.status !== 200,
    );
    assertError(response, 401, 'invalid_client');
    assert.ok(elapsed <= 1_000, `the old secret still worked ${elapsed} ms after the rotation`);

    const after = await tokenRequest(server.baseUrl, created.appId, created.clientId, newSecret);
    assert.equal(after.status, 200, after.text);
    assert.equal(after.body.token_type, 'bearer');
  });

  it('apps rotate-secret --grace 2: both secrets work until the printed instant, apps show says so, then the old one is refused; events say which secret', async () => {
    const created = await createApp(store, 'Rotated with grace');
    const withOld = () => tokenRequest(server.baseUrl, created.appId, created.clientId, created.clientSecret);
    assert.equal((await withOld()).status, 200); // the server has the app in its cache now

    const rotated = await cli(store, ['apps', 'rotate-secret', created.appId, '--grace', '2', '--json']);
    assert.equal(rotated.code, 0, rotated.stderr);
    const answer = parseJson(rotated.stdout, 'apps rotate-secret --grace --json output');
    const validUntil = Date.parse(answer.previousSecretValidUntil);
    assert.ok(Math.abs(validUntil - (Date.now() + 2_000)) < 1_000, answer.previousSecretValidUntil);
    assert.equal(answer.endedEarlierSecretValidUntil, null);
    assert.ok(!rotated.stdout.includes(created.clientSecret));
    const withNew = () => tokenRequest(server.baseUrl, created.appId, created.clientId, answer.clientSecret);
    const { response: fresh, elapsed } = await pollUntil(withNew, (r) => r.status === 200);
    assert.equal(fresh.status, 200, `the new secret did not work within ${elapsed} ms: ${fresh.text}`);
    assert.equal((await withOld()).status, 200, 'the previous secret stopped before the end of its grace period');

    const [shownJson, shownText] = await Promise.all([
      cli(store, ['apps', 'show', created.appId, '--json']),
      cli(store, ['apps', 'show', created.appId]),
    ]);
    assert.equal(parseJson(shownJson.stdout, 'apps show --json').previousSecretValidUntil, answer.previousSecretValidUntil);
    assert.match(shownText.stdout, new RegExp(`Previous ClientSecret +works until ${answer.previousSecretValidUntil}`));

    // Refused from the instant on, by the server's own clock, with no change signal needed.
    let last: JsonResponse;
    for (;;) {
      last = await withOld();
      if (last.status !== 200) break;
      assert.ok(Date.now() < validUntil + 500, `the previous secret still worked ${Date.now() - validUntil} ms after its end`);
      await sleep(100);
    }
    assert.ok(Date.now() >= validUntil, 'the previous secret was refused before its end');
    assertError(last, 401, 'invalid_client');
    assert.equal((await withNew()).status, 200);
    const after = await cli(store, ['apps', 'show', created.appId]);
    assert.match(after.stdout, new RegExp(`Previous ClientSecret +stopped at ${answer.previousSecretValidUntil}`));

    await sleep(200); // the server writes events within 20 ms
    const events = await cli(store, ['events', created.appId, '--limit', '500', '--json']);
    const lines = events.stdout
      .trim()
      .split('\n')
      .map((line) => parseJson(line, 'an events --json line'));
    const issued = lines.filter((event) => event.type === 'token.issued').map((event) => event.details.secret);
    assert.equal(issued[0], 'current');
    assert.ok(issued.includes('previous') && issued.at(-1) === 'current', JSON.stringify(issued));
    assert.ok(issued.indexOf('previous') < issued.lastIndexOf('current'));
    const rotation = lines.find((event) => event.type === 'app.secret_rotated');
    assert.deepEqual(rotation?.details, { adminTokensRevoked: 0, previousSecretValidUntil: validUntil });
  });

  it('apps rotate-secret with a bad --grace, or --grace with --revoke-admin-tokens: exit 2, a clear message, nothing rotated', async () => {
    const created = await createApp(store, 'Bad grace');
    for (const flags of [
      ['--grace', '0'],
      ['--grace', '-1'],
      ['--grace=-1'],
      ['--grace', '1.5'],
      ['--grace', '1e3'],
      ['--grace', '0x10'],
      ['--grace', ' 60'],
      ['--grace', ''],
      ['--grace', 'soon'],
      ['--grace', '2592001'],
      ['--grace', '99999999999999999999'],
      ['--grace'],
      ['--grace', '60', '--grace', '60'],
      ['--grace', '60', '--revoke-admin-tokens'],
    ]) {
      const result = await cli(store, ['apps', 'rotate-secret', created.appId, ...flags]);
      assert.equal(result.code, 2, `${flags.join(' ')}: exit ${result.code}, ${result.stdout} ${result.stderr}`);
      assert.equal(result.stdout, '', flags.join(' '));
      assert.ok(result.stderr.length > 0 && result.stderr.length < 300, result.stderr);
    }
    const bounds = await cli(store, ['apps', 'rotate-secret', created.appId, '--grace', '0', '--json']);
    assert.equal(parseJson(bounds.stderr, 'stderr').errorCode, 'USAGE');
    assert.match(bounds.stderr, /whole number of seconds from 1 to 2592000/);
    assert.equal((await cli(store, ['apps', 'show', created.appId, '--grace', '60'])).code, 2);
    assert.equal(
      parseJson((await cli(store, ['apps', 'show', created.appId, '--json'])).stdout, 'apps show').previousSecretValidUntil,
      null,
    );
    assert.equal((await tokenRequest(server.baseUrl, created.appId, created.clientId, created.clientSecret)).status, 200);

    const longest = await cli(store, ['apps', 'rotate-secret', created.appId, '--grace', '2592000']);
    assert.equal(longest.code, 0, longest.stderr);
    assert.match(longest.stdout, /the old one keeps working until \d{4}-\d\d-\d\dT/);
  });

  it('apps show says when the ClientSecret was last sent from a browser and recommends rotating it, until it is rotated', async () => {
    const created = await createApp(store, 'Secret in a page');
    const quiet = await cli(store, ['apps', 'show', created.appId, '--json']);
    assert.deepEqual(parseJson(quiet.stdout, 'apps show --json').browserExposures, []);
    assert.ok(!(await cli(store, ['apps', 'show', created.appId])).stdout.includes('browser'));

    const fromPage = await request(`${appUrlOf(server.baseUrl, created.appId)}/oauth2/token`, {
      ...tokenRequestInit(created.appId, {
        grant_type: 'client_credentials',
        client_id: created.clientId,
        client_secret: created.clientSecret,
      }),
      headers: { authorization: basic(created.appId), 'content-type': 'application/json', origin: 'https://shop.example.com' },
    });
    assertError(fromPage, 400, 'unauthorized_client');
    await sleep(200); // the server writes its events within 20 ms

    const [json, text] = await Promise.all([
      cli(store, ['apps', 'show', created.appId, '--json']),
      cli(store, ['apps', 'show', created.appId]),
    ]);
    assert.equal(json.code, 0, json.stderr);
    const [exposure, ...others] = parseJson(json.stdout, 'apps show --json').browserExposures;
    assert.deepEqual(others, []);
    assert.deepEqual(
      { ...exposure, lastExposedAt: typeof exposure.lastExposedAt },
      {
        lastExposedAt: 'string',
        origin: 'https://shop.example.com',
        clientAddress: '127.0.0.1',
        secret: 'current',
        credential: null,
        rotatedAt: null,
        revoked: false,
        worksUntil: null,
      },
    );
    assert.ok(Math.abs(Date.parse(exposure.lastExposedAt) - Date.now()) < 60_000);
    assert.match(
      text.stdout,
      new RegExp(`ClientSecret sent from a browser +${exposure.lastExposedAt}, from a page of https://shop\\.example\\.com`),
    );
    assert.ok(text.stdout.includes(`tessera apps rotate-secret ${created.appId} --revoke-admin-tokens`), text.stdout);
    for (const output of [json.stdout, text.stdout]) assert.ok(!output.includes(created.clientSecret));

    const events = await cli(store, ['events', created.appId, '--type', 'app.secret_exposed']);
    assert.match(events.stdout, /app\.secret_exposed +admin +127\.0\.0\.1 +secret=current origin=https:\/\/shop\.example\.com/);

    // A rotation with a grace period leaves the leaked secret working: apps show says so, and how to end it.
    assert.equal((await cli(store, ['apps', 'rotate-secret', created.appId, '--grace', '3600'])).code, 0);
    const inGrace = await cli(store, ['apps', 'show', created.appId]);
    assert.match(inGrace.stdout, /with a grace period: the leaked secret works until \d{4}-/);
    assert.ok(inGrace.stdout.includes(`tessera apps end-previous-secret ${created.appId}`), inGrace.stdout);
    const ended = await cli(store, ['apps', 'end-previous-secret', created.appId]);
    assert.equal(ended.code, 0, ended.stderr);
    assert.match(ended.stdout, /is refused from now on/);
    assert.equal((await tokenRequest(server.baseUrl, created.appId, created.clientId, created.clientSecret)).status, 401);
    const rotated = await cli(store, ['apps', 'show', created.appId]);
    assert.match(rotated.stdout, /rotated since, at /);
    assert.ok(!rotated.stdout.includes('tessera apps rotate-secret'), rotated.stdout);
    assert.match((await cli(store, ['apps', 'end-previous-secret', created.appId])).stdout, /nothing to end/);
  });

  it("after apps delete the app's tokens and Basic get 404 APP_NOT_FOUND within 1 s", async () => {
    const created = await createApp(store, 'Deleted while running');
    const admin = await tokenRequest(server.baseUrl, created.appId, created.clientId, created.clientSecret);
    assert.equal(admin.status, 200, admin.text);
    const whoamiUrl = `${server.baseUrl}/api/apps/${created.appId}/whoami`;
    const withToken = () => requestAs(whoamiUrl, bearer(admin.body.access_token));
    const withBasic = () => requestAs(whoamiUrl, basic(created.appId));
    assert.equal((await withToken()).status, 200);
    assert.equal((await withBasic()).status, 200);

    const deleted = await cli(store, ['apps', 'delete', created.appId, '--json']);
    assert.equal(deleted.code, 0, deleted.stderr);

    // Until the server learns of the deletion (at most a second), the token may already be refused
    // as INVALID_TOKEN (its row is gone) while the app is still cached: the end state is what counts.
    const seen = new Set<string>();
    const { response, elapsed } = await pollUntil(withToken, (r) => {
      seen.add(`${r.status} ${r.body?.errorCode ?? ''}`.trim());
      return r.status === 404;
    });
    assertError(response, 404, 'APP_NOT_FOUND');
    for (const status of seen) assert.ok(['200', '401 INVALID_TOKEN', '404 APP_NOT_FOUND'].includes(status), `unexpected answer ${status}`);
    assert.ok(elapsed <= 1_000, `the token still worked ${elapsed} ms after the deletion`);
    assertError(await withBasic(), 404, 'APP_NOT_FOUND');
    assertError(await tokenRequest(server.baseUrl, created.appId, created.clientId, created.clientSecret), 404, 'APP_NOT_FOUND');
    assertError(await tokenRequest(server.baseUrl, created.appId, created.appId, created.appKey), 404, 'APP_NOT_FOUND');
  });

  it('the server never logs a ClientSecret or a token', async () => {
    const created = await createApp(store, 'Logged app');
    const admin = await tokenRequest(server.baseUrl, created.appId, created.clientId, created.clientSecret);
    assert.equal(admin.status, 200, admin.text);
    await tokenRequest(server.baseUrl, created.appId, created.clientId, 'wrong-secret-for-the-log-test');
    await sleep(100); // the logger writes asynchronously
    for (const output of [server.stdout(), server.stderr()]) {
      assert.ok(!output.includes(created.clientSecret));
      assert.ok(!output.includes(admin.body.access_token));
      assert.ok(!output.includes('wrong-secret-for-the-log-test'));
    }
  });

  it('SIGTERM: the server exits with code 0 within 5 s', async () => {
    const result = await terminate(server, 5_000);
    assert.equal(result.signal, null, 'the server was killed by the signal instead of stopping');
    assert.equal(result.code, 0, `stderr: ${server.stderr()}`);
    await assert.rejects(fetch(`${server.baseUrl}/api/apps/none/whoami`), 'the server still answers after exiting');
  });
});

describe('token lifecycle from the CLI, with a server running', () => {
  const store = newStore();
  let server: ServerProcess;
  before(async () => {
    server = await serve(store, { DEMO_APP: 'off', HOUSEKEEPING_INTERVAL_SECONDS: '1' });
  });
  after(async () => {
    await children.killAll();
    store.dispose();
  });

  const whoami = (appId: string, token: string) => requestAs(`${server.baseUrl}/api/apps/${appId}/whoami`, bearer(token));
  async function refusedWithin(appId: string, token: string): Promise<void> {
    const { response, elapsed } = await pollUntil(
      () => whoami(appId, token),
      (r) => r.status !== 200,
    );
    assertError(response, 401, 'INVALID_TOKEN');
    assert.ok(elapsed <= 1_000, `the token still worked ${elapsed} ms after the revocation`);
  }

  it('tokens revoke-all --kind admin, then --kind all: the tokens are refused within 1 s', async () => {
    const app = await createApp(store, 'Revoked from the CLI');
    const admin = (await tokenRequest(server.baseUrl, app.appId, app.clientId, app.clientSecret)).body.access_token;
    const anonymous = (await tokenRequest(server.baseUrl, app.appId, app.appId, app.appKey)).body.access_token;
    assert.equal((await whoami(app.appId, admin)).status, 200);
    assert.equal((await whoami(app.appId, anonymous)).status, 200);

    const byKind = await cli(store, ['tokens', 'revoke-all', app.appId, '--kind', 'admin', '--json']);
    assert.equal(byKind.code, 0, byKind.stderr);
    assert.deepEqual(parseJson(byKind.stdout, 'tokens revoke-all --json'), {
      appId: app.appId,
      kind: 'admin',
      revoked: 1,
      message: `Every admin token of app ${app.appId} is refused from now on (1 revoked).`,
    });
    await refusedWithin(app.appId, admin);
    assert.equal((await whoami(app.appId, anonymous)).status, 200);

    const all = await cli(store, ['tokens', 'revoke-all', app.appId, '--kind', 'all']);
    assert.equal(all.code, 0, all.stderr);
    assert.match(
      all.stdout,
      new RegExp(
        `^Every admin token of app ${app.appId}, and every anonymous token issued up to \\d{4}-\\d\\d-\\d\\dT[0-9:.]+Z, is refused from now on\\.\n$`,
      ),
    );
    assert.doesNotMatch(all.stdout, /Revoked 0/, 'the admin tokens went first; anonymous tokens are not stored, and not counted');
    await refusedWithin(app.appId, anonymous);
    const events = await cli(store, ['events', app.appId, '--type', 'token.revoked']);
    assert.match(events.stdout, /anonymousCutoff=\d{4}-\d\d-\d\dT[0-9:.]+Z/, 'an instant as a person reads it');
  });

  it('keys rotate: new anonymous tokens carry the new key within 1 s, older ones keep working; keys retire ends them within 1 s', async () => {
    const app = await createApp(store, 'Keys from the CLI');
    const anonymousToken = async () => (await tokenRequest(server.baseUrl, app.appId, app.appId, app.appKey)).body.access_token as string;
    const before = await anonymousToken();
    const oldKey = signingKeyIdOf(before);

    const rotated = await cli(store, ['keys', 'rotate', '--json']);
    assert.equal(rotated.code, 0, rotated.stderr);
    const keys = parseJson(rotated.stdout, 'keys rotate --json') as {
      id: number;
      state: string;
      createdAt: string;
      retiredAt: string | null;
    }[];
    const signing = keys.find((key) => key.state === 'signing');
    assert.ok(signing !== undefined && signing.id > oldKey, rotated.stdout);
    assert.ok(!rotated.stdout.includes('secret'), 'a key is never printed');
    const started = Date.now();
    let after = await anonymousToken();
    while (signingKeyIdOf(after) !== signing.id && Date.now() - started < 1_000) {
      await sleep(50);
      after = await anonymousToken();
    }
    assert.equal(signingKeyIdOf(after), signing.id, 'the server signs with the new key within 1 s');
    assert.equal((await whoami(app.appId, before)).status, 200, 'a token of the older key still works');

    const signingRetired = await cli(store, ['keys', 'retire', String(signing.id)]);
    assert.equal(signingRetired.code, 1, 'the signing key cannot be retired');
    assert.match(signingRetired.stderr, /rotate first/);
    assert.equal((await cli(store, ['keys', 'retire', '65000'])).code, 1);
    for (const args of [
      ['keys', 'retire'],
      ['keys', 'retire', 'one'],
      ['keys', 'retire', '0'],
      ['keys', 'spin'],
      ['keys', 'list', '1'],
    ]) {
      assert.equal((await cli(store, args)).code, 2, args.join(' '));
    }

    const retired = await cli(store, ['keys', 'retire', String(oldKey)]);
    assert.equal(retired.code, 0, retired.stderr);
    assert.match(retired.stdout, new RegExp(`Key ${oldKey} is retired`));
    await refusedWithin(app.appId, before);
    assert.equal((await whoami(app.appId, after)).status, 200);
    const listed = await cli(store, ['keys', 'list']);
    assert.match(listed.stdout, new RegExp(`^\\s*${oldKey}\\s+retired\\s+created \\S+\\s+retired \\S+$`, 'm'));
    assert.match(listed.stdout, new RegExp(`^\\s*${signing.id}\\s+signing\\s+created \\S+$`, 'm'));
  });

  it('a single anonymous token revoked through one server is refused within 1 s by a server in another process', async () => {
    const app = await createApp(store, 'Revoked elsewhere');
    const other = await serve(store, { DEMO_APP: 'off' });
    const token = (await tokenRequest(server.baseUrl, app.appId, app.appId, app.appKey)).body.access_token as string;
    assert.equal((await requestAs(`${other.baseUrl}/api/apps/${app.appId}/whoami`, bearer(token))).status, 200);
    const revoked = await request(`${server.baseUrl}/api/apps/${app.appId}/oauth2/revoke`, {
      method: 'POST',
      headers: { authorization: bearer(token), 'content-type': 'application/json' },
      body: JSON.stringify({ token }),
    });
    assert.equal(revoked.status, 200, revoked.text);
    const { response, elapsed } = await pollUntil(
      () => requestAs(`${other.baseUrl}/api/apps/${app.appId}/whoami`, bearer(token)),
      (r) => r.status !== 200,
    );
    assertError(response, 401, 'INVALID_TOKEN');
    assert.ok(elapsed <= 1_000, `the token still worked ${elapsed} ms after the revocation`);
  });

  it('tokens revoke-all: exit 1 for an unknown app, exit 2 for a bad kind or a flag of another command', async () => {
    assert.equal((await cli(store, ['tokens', 'revoke-all', 'no-such-app', '--kind', 'all'])).code, 1);
    const app = await createApp(store, 'Usage');
    for (const args of [
      ['tokens', 'revoke-all', app.appId, '--kind', 'user'],
      ['tokens', 'revoke-all'],
      ['tokens', 'revoke', app.appId],
      ['tokens', 'revoke-all', app.appId, '--follow'],
      ['apps', 'show', app.appId, '--revoke-admin-tokens'],
      ['events', app.appId, '--kind', 'admin'],
    ]) {
      const result = await cli(store, args);
      assert.equal(result.code, 2, `${args.join(' ')}: ${result.stderr}`);
    }
  });

  // Issue 11, finding 4: without --kind, every token of the app used to be revoked.
  it('tokens revoke-all without --kind, or with a misspelt, empty or repeated one: exit 2, and every token still works', async () => {
    const app = await createApp(store, 'Typed in a hurry');
    const tokens = [
      (await tokenRequest(server.baseUrl, app.appId, app.clientId, app.clientSecret)).body.access_token,
      (await tokenRequest(server.baseUrl, app.appId, app.appId, app.appKey)).body.access_token,
    ];
    for (const token of tokens) assert.equal((await whoami(app.appId, token)).status, 200);
    /** The stored admin token, and the app's anonymous cut-off (none: null). */
    const stored = () => {
      const db = new Database(store.databaseUrl.slice('sqlite:'.length));
      try {
        const tokens = (db.prepare('SELECT count(*) AS n FROM tokens WHERE app_id = :appId').get({ appId: app.appId }) as { n: number }).n;
        const cutoff = (
          db.prepare('SELECT anonymous_cutoff AS at FROM apps WHERE app_id = :appId').get({ appId: app.appId }) as { at: number | null }
        ).at;
        return `${tokens} stored, cut-off ${cutoff}`;
      } finally {
        db.close();
      }
    };
    for (const flags of [
      [],
      ['--kind', 'ADMIN'],
      ['--kind', 'All'],
      ['--kind', ''],
      ['--kind=all '],
      ['--kind'],
      ['--kind', 'admin', '--kind', 'all'],
      ['--kind', 'all', '--kind', 'all'],
      ['--knd', 'admin'],
      ['--json'],
    ]) {
      const result = await cli(store, ['tokens', 'revoke-all', app.appId, ...flags]);
      assert.equal(result.code, 2, `${flags.join(' ')}: exit ${result.code}, ${result.stdout} ${result.stderr}`);
      assert.equal(result.stdout, '', flags.join(' '));
      assert.equal(stored(), '1 stored, cut-off null', `${flags.join(' ')} revoked a token`);
    }
    await sleep(1_100); // longer than the server takes to learn of a change made by the CLI
    for (const token of tokens) assert.equal((await whoami(app.appId, token)).status, 200);
  });

  it('apps rotate-secret --revoke-admin-tokens: admin tokens are refused within 1 s, anonymous ones keep working', async () => {
    const app = await createApp(store, 'Leaked secret');
    const admin = (await tokenRequest(server.baseUrl, app.appId, app.clientId, app.clientSecret)).body.access_token;
    const anonymous = (await tokenRequest(server.baseUrl, app.appId, app.appId, app.appKey)).body.access_token;
    assert.equal((await whoami(app.appId, admin)).status, 200);
    const rotated = await cli(store, ['apps', 'rotate-secret', app.appId, '--revoke-admin-tokens', '--json']);
    assert.equal(rotated.code, 0, rotated.stderr);
    assert.equal(parseJson(rotated.stdout, 'rotate-secret --json').adminTokensRevoked, 1);
    await refusedWithin(app.appId, admin);
    assert.equal((await whoami(app.appId, anonymous)).status, 200);
  });

  it('events --counts shows admin attempts throttled by the failed-admin limits, which no listing has', async () => {
    const app = await createApp(store, 'Guessed');
    // The server's default limit: 10 failures a minute per app and address, then 429.
    const statuses: number[] = [];
    for (let i = 0; i < 13; i++) statuses.push((await tokenRequest(server.baseUrl, app.appId, app.clientId, `wrong-secret-${i}`)).status);
    assert.deepEqual(statuses, [...Array(10).fill(401), ...Array(3).fill(429)]);
    await sleep(200);
    const counts = await cli(store, ['events', app.appId, '--counts', '--per', 'minute', '--since', '90m']);
    assert.equal(counts.code, 0, counts.stderr);
    const totals = counts.stdout
      .split('\n')
      .filter((line) => line.startsWith('total'))
      .map((line) => line.replace(/ +/g, ' '));
    assert.deepEqual(totals, ['total token.refused attempted:admin invalid_client 10', 'total token.throttled attempted:admin address 3']);
    assert.match(counts.stdout, /token\.throttled: admin attempts refused \(429\) past the failed-admin limits/);
    const listed = await cli(store, ['events', app.appId, '--type', 'token.throttled', '--json']);
    assert.equal(listed.code, 0, listed.stderr);
    assert.equal(listed.stdout, '');
  });

  it('events --format csv|jsonl prints every event the log keeps, newest first, as the API exports them', async () => {
    const app = await createApp(store, 'Exported');
    for (let i = 0; i < 3; i++) await tokenRequest(server.baseUrl, app.appId, app.clientId, `wrong-secret-${i}`);
    await sleep(200);
    const csv = await cli(store, ['events', app.appId, '--format', 'csv', '--type', 'token.refused']);
    assert.equal(csv.code, 0, csv.stderr);
    const rows = csv.stdout.split('\r\n');
    assert.equal(rows.pop(), '');
    assert.equal(rows[0], 'id,at,type,principal,attempted,clientAddress,details');
    assert.equal(rows.length, 4);
    assert.ok(
      rows.slice(1).every((row) => row.includes(',token.refused,,admin,')),
      rows.join('\n'),
    );
    const jsonl = await cli(store, ['events', app.appId, '--format', 'jsonl', '--since', '1h', '--json']);
    assert.equal(jsonl.code, 0, jsonl.stderr);
    const events = jsonl.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { id: string; type: string });
    assert.ok(events.length >= 3, 'the three refusals at least');
    assert.ok(Number(events[0]!.id) > Number(events.at(-1)!.id), 'newest first');
    const missing = await cli(store, ['events', '0000000000000000', '--format', 'csv']);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /APP_NOT_FOUND|no app|not found/i);
  });

  it("events prints the counts of the last 24 h and the app's events oldest first; --follow prints new ones as they happen, until SIGINT", async () => {
    const app = await createApp(store, 'Audited');
    await tokenRequest(server.baseUrl, app.appId, app.clientId, app.clientSecret);
    await tokenRequest(server.baseUrl, app.appId, app.clientId, 'wrong-secret-for-events');
    for (let i = 0; i < 3; i++) assert.equal((await tokenRequest(server.baseUrl, app.appId, app.appId, app.appKey)).status, 200);
    assert.equal((await cli(store, ['apps', 'rotate-secret', app.appId])).code, 0);
    await sleep(200);

    const listed = await cli(store, ['events', app.appId, '--json']);
    assert.equal(listed.code, 0, listed.stderr);
    const events = listed.stdout
      .trim()
      .split('\n')
      .map((line) => parseJson(line, 'an events --json line'));
    assert.deepEqual(
      events.map((event) => [event.type, event.principal, event.attempted]),
      [
        ['token.issued', 'admin', null],
        ['token.refused', null, 'admin'],
        ['app.secret_rotated', 'operator', null],
      ],
    );
    assert.equal(events[2].clientAddress, null);
    assert.ok(!listed.stdout.includes('wrong-secret-for-events'));

    const text = await cli(store, ['events', app.appId]);
    assert.equal(text.code, 0, text.stderr);
    const lines = text.stdout.trimEnd().split('\n');
    assert.deepEqual(
      lines.slice(0, 4).map((line) => line.replace(/ +/g, ' ')),
      [
        'Counted in the last 24 h (more: --counts):',
        ' token.issued anonymous 3',
        ' token.issued admin 1',
        ' token.refused attempted:admin invalid_client 1',
      ],
    );
    assert.equal(lines.length, 4 + 3);
    assert.match(lines[5]!, /token\.refused +attempted:admin +127\.0\.0\.1 +reason=invalid_client/);
    const refused = await cli(store, ['events', app.appId, '--type', 'token.refused']);
    assert.deepEqual(refused.stdout.trimEnd().split('\n').length, 2 + 1, refused.stdout);

    const counts = await cli(store, ['events', app.appId, '--counts', '--per', 'minute', '--since', '90m', '--json']);
    assert.equal(counts.code, 0, counts.stderr);
    const described = parseJson(counts.stdout, 'events --counts --json');
    assert.equal(described.per, 'minute');
    assert.ok(Date.parse(described.until) - Date.parse(described.since) >= 90 * 60_000);
    assert.deepEqual(described.totals, [
      { type: 'token.issued', principal: 'anonymous', attempted: null, reason: null, count: 3 },
      { type: 'token.issued', principal: 'admin', attempted: null, reason: null, count: 1 },
      { type: 'token.refused', principal: null, attempted: 'admin', reason: 'invalid_client', count: 1 },
    ]);
    const table = await cli(store, ['events', app.appId, '--counts']);
    assert.equal(table.code, 0, table.stderr);
    const rows = table.stdout.trimEnd().split('\n');
    assert.match(rows[0]!, new RegExp(`^Counts of ${app.appId} per hour, from \\d{4}-\\d{2}-\\d{2}T\\d{2}:00Z to .* \\(UTC\\)$`));
    assert.match(rows[1]!, /^hour +event +count$/);
    assert.match(rows[2]!, /^\d{4}-\d{2}-\d{2}T\d{2}:00Z +token\.issued admin +1$/);
    assert.deepEqual(
      rows.slice(-3).map((row) => row.replace(/ +/g, ' ')),
      ['total token.issued anonymous 3', 'total token.issued admin 1', 'total token.refused attempted:admin invalid_client 1'],
    );

    const follow = spawn(process.execPath, [BIN, 'events', app.appId, '--follow', '--json', '--limit', '1'], {
      cwd: REPO_ROOT,
      env: childEnvironment({ DATABASE_URL: store.databaseUrl }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.add(follow);
    let output = '';
    follow.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    const followed = () =>
      output
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => parseJson(line, 'a --follow line'));
    const waitForLines = async (count: number) => {
      const deadline = Date.now() + 3_000;
      while (followed().length < count) {
        if (Date.now() > deadline) assert.fail(`--follow printed ${JSON.stringify(output)}`);
        await sleep(25);
      }
    };
    await waitForLines(1);
    assert.equal(followed()[0].type, 'app.secret_rotated');
    await tokenRequest(server.baseUrl, app.appId, app.appId, app.appKey); // counted, not a row
    await tokenRequest(server.baseUrl, app.appId, app.clientId, app.clientSecret); // the secret before the rotation
    await waitForLines(2);
    assert.deepEqual([followed()[1].type, followed()[1].principal, followed()[1].attempted], ['token.refused', null, 'admin']);

    const exited = new Promise<number | null>((resolve) => follow.once('exit', (code) => resolve(code)));
    follow.kill('SIGINT');
    assert.equal(await exited, 0);
  });

  it("the server removes expired tokens' records in the background", async () => {
    const app = await createApp(store, 'Short-lived');
    const issued = await request(`${server.baseUrl}/api/apps/${app.appId}/oauth2/token`, {
      method: 'POST',
      headers: { authorization: basic(app.appId), 'content-type': 'application/json' },
      body: JSON.stringify({
        grant_type: 'client_credentials',
        client_id: app.clientId,
        client_secret: app.clientSecret,
        expiresAt: Date.now() + 300,
      }),
    });
    assert.equal(issued.status, 200, issued.text);
    const count = () => {
      const db = new Database(store.databaseUrl.slice('sqlite:'.length));
      try {
        return (db.prepare('SELECT count(*) AS n FROM tokens WHERE app_id = :appId').get({ appId: app.appId }) as { n: number }).n;
      } finally {
        db.close();
      }
    };
    assert.equal(count(), 1);
    const deadline = Date.now() + 4_000;
    while (count() > 0) {
      if (Date.now() > deadline) assert.fail("the expired token's record is still stored");
      await sleep(100);
    }
  });
});

describe('first run: tessera serve on an empty store creates and prints a demo app', () => {
  const store = newStore();
  after(async () => {
    await children.killAll();
    store.dispose();
  });

  it('prints the four keys and curl commands that work when pasted into bash; a second start adds no demo app', async () => {
    const first = await serve(store, {});
    // The banner is written right after the server starts listening; give the pipe a moment.
    const deadline = Date.now() + 5_000;
    while (!/Try it[^\n]*\n(\n| {2}[^\n]*\n)+\n/.test(first.stderr()) && Date.now() < deadline) await sleep(20);
    const banner = first.stderr();

    const value = (label: string) => {
      const match = new RegExp(`^\\s*${label}\\s*:?\\s+(\\S+)\\s*$`, 'm').exec(banner);
      assert.ok(match, `no ${label} in the banner:\n${banner}`);
      return match[1]!;
    };
    const keys = { appId: value('AppID'), appKey: value('AppKey'), clientId: value('ClientID'), clientSecret: value('ClientSecret') };
    assert.ok(!first.stdout().includes(keys.clientSecret), 'the ClientSecret went to the log (stdout)');

    const list = await cli(store, ['apps', 'list', '--json']);
    const apps = parseJson(list.stdout, 'apps list --json output');
    assert.equal(apps.length, 1, list.stdout);
    assert.equal(apps[0].appId, keys.appId);
    assert.equal(apps[0].appKey, keys.appKey);
    assert.equal(apps[0].clientId, keys.clientId);
    const adminId: string = apps[0].adminId;

    // The lines after "Try it", indented by two spaces, up to the next blank line after them.
    const lines = banner.split('\n');
    const start = lines.findIndex((line) => line.includes('Try it'));
    assert.ok(start >= 0, `no "Try it" in the banner:\n${banner}`);
    const script: string[] = [];
    for (const line of lines.slice(start + 1)) {
      if (line.trim() === '') {
        if (script.length > 0) break;
        continue;
      }
      assert.ok(line.startsWith('  '), `a line of the commands is not indented by two spaces: ${JSON.stringify(line)}`);
      script.push(line.slice(2));
    }
    assert.ok(
      script.some((line) => line.includes('curl')),
      `no curl command in the banner:\n${banner}`,
    );
    assert.ok(script.join('\n').includes(first.baseUrl), 'the commands do not point at the running server');

    const bash = await new Promise<CliResult>((resolve, reject) => {
      const child = spawn('bash', ['-c', script.join('\n')], { stdio: ['ignore', 'pipe', 'pipe'] });
      children.add(child);
      let stdout = '';
      let stderr = '';
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      child.on('error', reject);
      child.on('close', (code) => {
        clearTimeout(timer);
        resolve({ code, stdout, stderr, exitedAt: performance.now() });
      });
    });
    assert.equal(bash.code, 0, `bash failed:\n${script.join('\n')}\nstderr: ${bash.stderr}`);
    const outputs = bash.stdout
      .split('\n')
      .filter((line) => line.trim() !== '')
      .map((line) => parseJson(line, 'a whoami output'));
    // The admin token is asked to live 15 minutes, as admin tokens should.
    const adminExpiry: unknown = outputs[2]?.expiresAt;
    assert.ok(
      typeof adminExpiry === 'number' && adminExpiry > Date.now() + 880_000 && adminExpiry <= Date.now() + 900_000,
      `the admin token expires at ${String(adminExpiry)}`,
    );
    assert.deepEqual(
      outputs,
      [
        { appId: keys.appId, principal: 'anonymous', id: 'ANONYMOUS', auth: 'basic', expiresAt: null },
        { appId: keys.appId, principal: 'anonymous', id: 'ANONYMOUS', auth: 'bearer', expiresAt: null },
        { appId: keys.appId, principal: 'admin', id: adminId, auth: 'bearer', expiresAt: adminExpiry },
      ],
      `stdout of the pasted commands:\n${bash.stdout}\nstderr:\n${bash.stderr}`,
    );

    // The portal: a one-time link sets the password of developer@localhost, who owns the demo app.
    const link = /^ {2}(http:\/\/\S+\/portal\/set-password\?token=\S+)$/m.exec(banner)?.[1];
    assert.ok(link, `no set-password link in the banner:\n${banner}`);
    assert.ok(link.startsWith(first.baseUrl), link);
    assert.ok(!first.stdout().includes(new URL(link).searchParams.get('token')!), 'the link went to the log (stdout)');
    const portal = portalClient(first);
    const form = await portal.page(link.slice(first.baseUrl.length));
    assert.match(form.text, /developer@localhost/);
    const password = 'the newcomer picks a password';
    const set = await portal.post('/portal/set-password', {
      _csrf: form.csrf,
      token: new URL(link).searchParams.get('token')!,
      password,
      repeat: password,
    });
    assert.equal(set.status, 303, set.text);
    const yourApps = await portal.get('/portal/');
    assert.equal(yourApps.status, 200);
    assert.ok(yourApps.text.includes(keys.appId) && yourApps.text.includes('Demo app'), yourApps.text);

    const stopped = await terminate(first, 5_000);
    assert.equal(stopped.code, 0, first.stderr());

    const second = await serve(store, {});
    try {
      await sleep(200);
      assert.ok(!second.stderr().includes(keys.clientSecret));
      assert.ok(!/demo app/i.test(second.stderr()), `the second start printed a demo banner:\n${second.stderr()}`);
      const again = parseJson((await cli(store, ['apps', 'list', '--json'])).stdout, 'apps list --json output');
      assert.equal(again.length, 1, 'a second demo app was created');
      assert.equal(again[0].appId, keys.appId);
    } finally {
      const stoppedAgain = await terminate(second, 5_000);
      assert.equal(stoppedAgain.code, 0, second.stderr());
    }
  });

  it('DEMO_APP=off: an empty store stays empty', async () => {
    const empty = newStore();
    try {
      const server = await serve(empty, { DEMO_APP: 'off' });
      try {
        await sleep(200);
        assert.ok(!/demo app/i.test(server.stderr()), server.stderr());
        const list = parseJson((await cli(empty, ['apps', 'list', '--json'])).stdout, 'apps list --json output');
        assert.deepEqual(list, []);
        const developers = parseJson((await cli(empty, ['developers', 'list', '--json'])).stdout, 'developers list --json output');
        assert.deepEqual(developers, [], 'no first-run developer either');
      } finally {
        assert.equal((await terminate(server, 5_000)).code, 0);
      }
    } finally {
      empty.dispose();
    }
  });
});
