import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { assertError } from '../helpers/assert.js';
import { Children, createAppWithCli, terminate, type CreatedApp } from '../helpers/fleet.js';
import { basic, bearer, request, type JsonResponse } from '../helpers/http.js';
import { childEnvironment, type ServerProcess, startServerProcess, TESSERA_MAIN } from '../helpers/process.js';

/**
 * The real `tessera serve` as a child process, with debug logs and request logging on: whatever is sent,
 * no secret, token or credential may reach the logs on stdout or the SQLite file in plain text. Piped,
 * the logs are JSON lines; on a terminal (a pseudo-terminal made by util-linux's `script`), readable
 * lines, unless LOG_FORMAT says otherwise.
 */

// This file compiles to <outDir>/tests/http/; the CLI it tests is the one compiled beside it.

interface DemoKeys {
  appId: string;
  appKey: string;
  clientId: string;
  clientSecret: string;
}

function parseBanner(stderr: string): DemoKeys | undefined {
  const value = (label: string) => new RegExp(`^ {2}${label} +(\\S+)$`, 'm').exec(stderr)?.[1];
  const [appId, appKey, clientId, clientSecret] = ['AppID', 'AppKey', 'ClientID', 'ClientSecret'].map(value);
  if (appId === undefined || appKey === undefined || clientId === undefined || clientSecret === undefined) return undefined;
  return { appId, appKey, clientId, clientSecret };
}

function waitFor<T>(what: string, probe: () => T | undefined, child: ChildProcess, output: () => string, timeoutMs = 15_000): Promise<T> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const timer = setInterval(() => {
      const found = probe();
      if (found !== undefined) {
        clearInterval(timer);
        resolve(found);
      } else if (child.exitCode !== null || child.signalCode !== null || Date.now() - started > timeoutMs) {
        clearInterval(timer);
        reject(new Error(`${what} never came (exit ${child.exitCode}, signal ${child.signalCode}):\n${output()}`));
      }
    }, 20);
  });
}

describe('logs and the store of the real server keep no secret', () => {
  let dir: string;
  let dbPath: string;
  let server: ServerProcess;
  let child: ChildProcess;
  let stdout = '';
  let stderr = '';
  let baseUrl: string;
  let keys: DemoKeys;
  let exit: { code: number | null; signal: NodeJS.Signals | null };

  /** What must appear in no log line and in no byte of the store. */
  const secrets = new Map<string, string>();
  /** Authorization header values sent: none may reach the logs. */
  const authorizationValues = new Set<string>();
  const tokens: string[] = [];
  const wrongSecrets = [
    '0badc0de'.repeat(8),
    'wrong-secret-sent-as-client-secret-basic',
    'wrong-secret-of-an-unknown-client-id',
    'wrong-secret-of-the-sdk-path',
  ];

  async function send(path: string, init: RequestInit & { headers?: Record<string, string> } = {}): Promise<JsonResponse> {
    const authorization = init.headers?.authorization;
    if (authorization !== undefined) authorizationValues.add(authorization);
    return request(`${baseUrl}${path}`, { ...init, signal: AbortSignal.timeout(5_000) });
  }

  function json(fields: Record<string, unknown>): string {
    return JSON.stringify({ grant_type: 'client_credentials', ...fields });
  }

  function tokenOf(response: JsonResponse): string {
    assert.equal(response.status, 200, response.text);
    const token = response.body.access_token as string;
    tokens.push(token);
    return token;
  }

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tessera-logs-test-'));
    dbPath = join(dir, 'tessera.db');
    server = await startServerProcess({
      entry: TESSERA_MAIN,
      cwd: dir,
      env: { DATABASE_URL: `sqlite:${dbPath}`, LOG_LEVEL: 'debug', LOG_REQUESTS: 'on', DEMO_APP: 'on' },
    });
    child = server.child;
    baseUrl = server.baseUrl;
    keys = await waitFor(
      'the demo banner',
      () => parseBanner(server.stderr()),
      child,
      () => `stdout:\n${server.stdout()}\nstderr:\n${server.stderr()}`,
    );
    secrets.set('the ClientSecret', keys.clientSecret);
    wrongSecrets.forEach((secret, i) => secrets.set(`wrong secret #${i + 1}`, secret));

    const tokenPath = `/api/apps/${keys.appId}/oauth2/token`;
    const appBasic = basic(keys.appId);

    // Tokens of every variant.
    const adminToken = tokenOf(
      await send(tokenPath, {
        method: 'POST',
        headers: { authorization: appBasic, 'content-type': 'application/json' },
        body: json({ client_id: keys.clientId, client_secret: keys.clientSecret }),
      }),
    );
    const anonymousToken = tokenOf(
      await send(tokenPath, {
        method: 'POST',
        headers: { authorization: appBasic, 'content-type': 'application/json' },
        body: json({ client_id: keys.appId, client_secret: keys.appKey }),
      }),
    );
    const clientSecretBasic = basic(keys.clientId, keys.clientSecret);
    secrets.set('the base64 of the client_secret_basic credentials', clientSecretBasic.slice('Basic '.length));
    const formToken = tokenOf(
      await send(tokenPath, {
        method: 'POST',
        headers: { authorization: clientSecretBasic, 'content-type': 'application/x-www-form-urlencoded' },
        body: 'grant_type=client_credentials',
      }),
    );
    tokenOf(
      await send('/api/oauth2/token?disable_cache=1', {
        method: 'POST',
        headers: { 'x-kii-appid': keys.appId, 'x-kii-appkey': keys.appKey, 'content-type': 'application/json' },
        body: JSON.stringify({ client_id: keys.clientId, client_secret: keys.clientSecret }),
      }),
    );
    // A token request with the secret and a token in the query string as well (unknown query parameters are ignored).
    tokenOf(
      await send(`${tokenPath}?client_secret=${keys.clientSecret}&access_token=${adminToken}`, {
        method: 'POST',
        headers: { authorization: appBasic, 'content-type': 'application/x-www-form-urlencoded' },
        body: `grant_type=client_credentials&client_id=${keys.clientId}&client_secret=${keys.clientSecret}`,
      }),
    );

    // Using them.
    for (const token of [adminToken, anonymousToken, formToken]) {
      const whoami = await send(`/api/apps/${keys.appId}/whoami`, { headers: { authorization: bearer(token) } });
      assert.equal(whoami.status, 200, whoami.text);
    }
    assert.equal((await send(`/api/apps/${keys.appId}/whoami`, { headers: { authorization: appBasic } })).status, 200);
    assert.equal((await send(`/api/apps/${keys.appId}`, { headers: { authorization: bearer(adminToken) } })).status, 200);
    // Tokens in the query string: refused (only headers authenticate), and never logged.
    assertError(await send(`/api/apps/${keys.appId}/whoami?access_token=${adminToken}`), 401, 'UNAUTHORIZED');
    const withBoth = await send(`/api/apps/${keys.appId}/whoami?access_token=${anonymousToken}&token=${formToken}`, {
      headers: { authorization: bearer(adminToken) },
    });
    assert.equal(withBoth.status, 200, withBoth.text);
    // A token on a path that does not exist, and with the /me rule.
    assertError(
      await send(`/api/apps/${keys.appId}/users/me?access_token=${adminToken}`, { headers: { authorization: bearer(adminToken) } }),
      400,
      'ME_NOT_ALLOWED_FOR_ADMIN',
    );

    // Failures with wrong secrets, in every way they can be sent.
    const [wrongJson, wrongBasic, wrongUnknown, wrongSdk] = wrongSecrets as [string, string, string, string];
    assertError(
      await send(tokenPath, {
        method: 'POST',
        headers: { authorization: appBasic, 'content-type': 'application/json' },
        body: json({ client_id: keys.clientId, client_secret: wrongJson }),
      }),
      401,
      'invalid_client',
    );
    const wrongClientSecretBasic = basic(keys.clientId, wrongBasic);
    secrets.set('the base64 of the wrong client_secret_basic credentials', wrongClientSecretBasic.slice('Basic '.length));
    assertError(
      await send(tokenPath, {
        method: 'POST',
        headers: { authorization: wrongClientSecretBasic, 'content-type': 'application/x-www-form-urlencoded' },
        body: 'grant_type=client_credentials',
      }),
      401,
      'invalid_client',
    );
    assertError(
      await send(tokenPath, {
        method: 'POST',
        headers: { authorization: appBasic, 'content-type': 'application/x-www-form-urlencoded' },
        body: `grant_type=client_credentials&client_id=${'c'.repeat(32)}&client_secret=${wrongUnknown}`,
      }),
      401,
      'invalid_client',
    );
    assertError(
      await send('/api/oauth2/token', {
        method: 'POST',
        headers: { 'x-kii-appid': keys.appId, 'x-kii-appkey': keys.appKey, 'content-type': 'application/json' },
        body: JSON.stringify({ client_id: keys.clientId, client_secret: wrongSdk }),
      }),
      401,
      'invalid_client',
    );
    // Broken requests that still carry the secret: malformed JSON, a body of the wrong type, a repeated form field.
    assertError(
      await send(tokenPath, {
        method: 'POST',
        headers: { authorization: appBasic, 'content-type': 'application/json' },
        body: `{"client_id":"${keys.clientId}","client_secret":"${keys.clientSecret}"`,
      }),
      400,
      'invalid_request',
    );
    assertError(
      await send(tokenPath, {
        method: 'POST',
        headers: { authorization: appBasic, 'content-type': 'text/plain' },
        body: `client_secret=${keys.clientSecret}`,
      }),
      415,
      'UNSUPPORTED_MEDIA_TYPE',
    );
    assertError(
      await send(tokenPath, {
        method: 'POST',
        headers: { authorization: appBasic, 'content-type': 'application/x-www-form-urlencoded' },
        body: `grant_type=client_credentials&client_id=${keys.clientId}&client_secret=${keys.clientSecret}&client_secret=${keys.clientSecret}`,
      }),
      400,
      'invalid_request',
    );
    // Bad tokens (expired-looking, of the right shape) on whoami.
    const forgedBytes = Buffer.from(adminToken, 'base64url');
    forgedBytes[20] = forgedBytes[20]! ^ 0x01; // a bit of the verifier: a different, refused token
    assertError(
      await send(`/api/apps/${keys.appId}/whoami`, { headers: { authorization: bearer(forgedBytes.toString('base64url')) } }),
      401,
      'INVALID_TOKEN',
    );

    for (const [i, token] of tokens.entries()) secrets.set(`access token #${i + 1}`, token);

    exit = await terminate(server, 10_000);
    stdout = server.stdout();
    stderr = server.stderr();
  });

  after(() => {
    if (child !== undefined && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it('exits with code 0 on SIGTERM', () => {
    assert.deepEqual(exit, { code: 0, signal: null }, `stdout:\n${stdout.slice(-2000)}\nstderr:\n${stderr.slice(-2000)}`);
  });

  it('writes one JSON object per line on stdout, and logged the requests', () => {
    const lines = stdout.split('\n').filter((line) => line.trim() !== '');
    assert.ok(lines.length > 0, 'no log lines');
    const entries = lines.map((line, i) => {
      try {
        return JSON.parse(line) as Record<string, unknown>;
      } catch {
        assert.fail(`log line ${i + 1} is not JSON: ${line}`);
      }
    });
    for (const entry of entries) {
      assert.equal(typeof entry.level, 'number');
      assert.equal(typeof entry.time, 'number');
      assert.equal(typeof entry.msg, 'string');
    }
    // The logs are worth checking: every request was logged, with its path.
    const paths = entries.map((entry) => (entry.req as { path?: string } | undefined)?.path).filter((path) => path !== undefined);
    assert.ok(paths.includes(`/api/apps/${keys.appId}/oauth2/token`), `no token request in the logs:\n${stdout.slice(0, 2000)}`);
    assert.ok(paths.includes(`/api/apps/${keys.appId}/whoami`), 'no whoami request in the logs');
    assert.ok(paths.includes('/api/oauth2/token'), 'no SDK token request in the logs');
  });

  it('logs no secret, no token and no credential sent', () => {
    assert.ok(secrets.size >= 10, `too few values to look for: ${[...secrets.keys()].join(', ')}`);
    const leaked = [...secrets].filter(([, value]) => stdout.includes(value)).map(([name]) => name);
    assert.deepEqual(leaked, [], 'found in the logs');
    const leakedHeaders = [...authorizationValues].filter(
      (value) => stdout.includes(value) || stdout.includes(value.split(' ')[1] ?? value),
    );
    assert.deepEqual(leakedHeaders, [], 'Authorization header values found in the logs');
  });

  it('keeps neither the ClientSecret nor any access token in plain text in the SQLite files', () => {
    const files = [dbPath, `${dbPath}-wal`, `${dbPath}-shm`, `${dbPath}-journal`].filter((path) => existsSync(path));
    const bytes = Buffer.concat(files.map((path) => readFileSync(path)));
    // The files are the right ones: they hold the demo app.
    assert.ok(bytes.includes(keys.appId), `the AppID is not in ${files.join(', ')}`);
    const found = [...secrets]
      .filter(([name]) => name === 'the ClientSecret' || name.startsWith('access token') || name.startsWith('wrong secret'))
      .filter(([, value]) => bytes.includes(value) || bytes.includes(Buffer.from(value, 'utf16le')))
      .map(([name]) => name);
    assert.deepEqual(found, [], `found in ${files.join(', ')}`);
  });
});

/** What a terminal shows, without colours and carriage returns. */
function plain(output: string): string {
  // eslint-disable-next-line no-control-regex -- ESC [ … m is a terminal's colour code
  return output.replace(/\x1b\[[0-9;]*m/g, '').replace(/\r/g, '');
}

interface TerminalServer {
  /** The script process, whose pseudo-terminal's output is `output()`. */
  script: ChildProcess;
  /** The pid of `tessera serve` itself, inside the terminal. */
  pid: number;
  baseUrl: string;
  output(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * `tessera serve` with a pseudo-terminal as its stdout and stderr: `script -qfec CMD /dev/null` runs
 * CMD on a new terminal and copies what it shows to script's own stdout (-e: script exits with CMD's
 * code). The shell prints its pid, then becomes the server (exec), so that the signal goes to the server.
 */
async function startOnTerminal(children: Children, cwd: string, env: Record<string, string>): Promise<TerminalServer> {
  const command = `echo "server pid $$"; exec '${process.execPath}' '${TESSERA_MAIN}' serve`;
  const script = spawn('script', ['-qfec', command, '/dev/null'], {
    cwd,
    env: childEnvironment({ HOST: '127.0.0.1', PORT: '0', TERM: 'xterm', ...env }),
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  children.add(script);
  let output = '';
  script.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  script.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    script.on('exit', (code, signal) => resolve({ code, signal })),
  );
  const started = await waitFor(
    'the listening line on the terminal',
    () => {
      const text = plain(output);
      const pid = /^server pid (\d+)$/m.exec(text)?.[1];
      const listening = text.split('\n').find((line) => line.includes('Tessera is listening'));
      const url = listening === undefined ? undefined : /"url":"(http:\/\/[^"]+)"/.exec(listening)?.[1];
      return pid !== undefined && url !== undefined ? { pid: Number(pid), baseUrl: url } : undefined;
    },
    script,
    () => output,
    30_000,
  );
  return { script, ...started, output: () => output, exited };
}

async function stopOnTerminal(server: TerminalServer): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  process.kill(server.pid, 'SIGTERM');
  const timeout = new Promise<never>((_, reject) =>
    setTimeout(() => reject(new Error(`still running 10 s after SIGTERM:\n${plain(server.output()).slice(-2000)}`)), 10_000).unref(),
  );
  return Promise.race([server.exited, timeout]);
}

describe('on a terminal, logs are readable lines, and keep no secret', () => {
  const children = new Children();
  let dir: string;
  let app: CreatedApp;
  let output = '';
  let exit: { code: number | null; signal: NodeJS.Signals | null };
  const secrets = new Map<string, string>();
  const wrongSecret = 'wrong-secret-sent-on-a-terminal-'.repeat(2);

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tessera-terminal-logs-test-'));
    const databaseUrl = `sqlite:${join(dir, 'tessera.db')}`;
    // The app comes from the CLI, not the demo banner, which shows its ClientSecret on the terminal.
    app = await createAppWithCli(children, { entry: TESSERA_MAIN, cwd: dir, databaseUrl }, 'Terminal logs');
    const server = await startOnTerminal(children, dir, {
      DATABASE_URL: databaseUrl,
      LOG_LEVEL: 'debug',
      LOG_REQUESTS: 'on',
      DEMO_APP: 'off',
    });
    const tokenPath = `${server.baseUrl}/api/apps/${app.appId}/oauth2/token`;
    const clientSecretBasic = basic(app.clientId, app.clientSecret);
    secrets.set('the ClientSecret', app.clientSecret);
    secrets.set('the AppKey', app.appKey);
    secrets.set('the base64 of the client_secret_basic credentials', clientSecretBasic.slice('Basic '.length));
    secrets.set('a wrong secret', wrongSecret);

    const issued = await request(`${tokenPath}?client_secret=${app.clientSecret}`, {
      method: 'POST',
      headers: { authorization: basic(app.appId), 'content-type': 'application/json' },
      body: JSON.stringify({ grant_type: 'client_credentials', client_id: app.clientId, client_secret: app.clientSecret }),
    });
    assert.equal(issued.status, 200, issued.text);
    const token = issued.body.access_token as string;
    secrets.set('the admin token', token);
    const anonymous = await request(tokenPath, {
      method: 'POST',
      headers: { authorization: basic(app.appId), 'content-type': 'application/x-www-form-urlencoded' },
      body: `grant_type=client_credentials&client_id=${app.appId}&client_secret=${app.appKey}`,
    });
    assert.equal(anonymous.status, 200, anonymous.text);
    secrets.set('the anonymous token', anonymous.body.access_token as string);
    const formToken = await request(tokenPath, {
      method: 'POST',
      headers: { authorization: clientSecretBasic, 'content-type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=client_credentials',
    });
    assert.equal(formToken.status, 200, formToken.text);
    const whoami = await request(`${server.baseUrl}/api/apps/${app.appId}/whoami?access_token=${token}`, {
      headers: { authorization: bearer(token) },
    });
    assert.equal(whoami.status, 200, whoami.text);
    assertError(
      await request(tokenPath, {
        method: 'POST',
        headers: { authorization: basic(app.appId), 'content-type': 'application/json' },
        body: JSON.stringify({ grant_type: 'client_credentials', client_id: app.clientId, client_secret: wrongSecret }),
      }),
      401,
      'invalid_client',
    );

    exit = await stopOnTerminal(server);
    output = plain(server.output());
  });

  after(async () => {
    await children.killAll();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it('exits with code 0 on SIGTERM', () => {
    assert.deepEqual(exit, { code: 0, signal: null }, output.slice(-2000));
  });

  it('writes readable lines, not JSON: time, level, message', () => {
    const lines = output.split('\n').filter((line) => line.trim() !== '' && !line.startsWith('server pid '));
    assert.ok(lines.length >= 5, `too few lines:\n${output}`);
    assert.ok(!output.includes('{"level":'), `JSON log lines on a terminal:\n${output.slice(0, 2000)}`);
    // Each entry starts a line; only an error's fields and stack continue it on indented lines.
    for (const line of lines.filter((text) => !/^\s/.test(text))) {
      assert.match(
        line,
        /^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}\] (TRACE|DEBUG|INFO|WARN|ERROR|FATAL): \S/,
        'a line that is not a log line',
      );
    }
    assert.ok(
      lines.some((line) => /INFO: Tessera is listening/.test(line)),
      output,
    );
    // The requests, with their paths (the query string left out).
    const requests = lines.filter((line) => line.includes('INFO: request completed'));
    assert.ok(
      requests.some((line) => line.includes(`"path":"/api/apps/${app.appId}/oauth2/token"`) && line.includes('"statusCode":200')),
      output,
    );
    assert.ok(
      requests.some((line) => line.includes(`"path":"/api/apps/${app.appId}/whoami"`)),
      output,
    );
  });

  it('shows the last lines, "draining" then "stopped", after SIGTERM', () => {
    const draining = output.search(/INFO: draining in-flight requests, then stopping \{"signal":"SIGTERM"\}/);
    const stopped = output.search(/INFO: stopped\n/);
    assert.ok(draining >= 0 && stopped > draining, `no "stopped" after "draining":\n${output.slice(-1500)}`);
  });

  it('shows no secret, no token and no credential sent', () => {
    assert.ok(output.includes(app.appId), 'the logs are worth checking: they name the app');
    const leaked = [...secrets].filter(([, value]) => output.includes(value)).map(([name]) => name);
    assert.deepEqual(leaked, [], 'found in the logs');
  });
});

describe('LOG_FORMAT overrides what the terminal decides', () => {
  const children = new Children();
  let dir: string;
  after(async () => {
    await children.killAll();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it('json: JSON lines on a terminal too', async () => {
    dir = mkdtempSync(join(tmpdir(), 'tessera-log-format-test-'));
    const server = await startOnTerminal(children, dir, {
      DATABASE_URL: `sqlite:${join(dir, 'json.db')}`,
      DEMO_APP: 'off',
      LOG_FORMAT: 'json',
    });
    assert.deepEqual(await stopOnTerminal(server), { code: 0, signal: null });
    const lines = plain(server.output())
      .split('\n')
      .filter((line) => line.trim() !== '' && !line.startsWith('server pid '));
    const messages = lines.map((line) => (JSON.parse(line) as { msg: string }).msg);
    assert.deepEqual(messages.slice(-2), ['draining in-flight requests, then stopping', 'stopped']);
  });

  it('pretty: readable lines through a pipe too, without colours', async () => {
    const child = spawn(process.execPath, [TESSERA_MAIN, 'serve'], {
      cwd: dir,
      env: childEnvironment({
        HOST: '127.0.0.1',
        PORT: '0',
        DATABASE_URL: `sqlite:${join(dir, 'pretty.db')}`,
        DEMO_APP: 'off',
        LOG_FORMAT: 'pretty',
      }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.add(child);
    let stdout = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    await waitFor(
      'the listening line',
      () => (stdout.includes('Tessera is listening') ? true : undefined),
      child,
      () => stdout,
      30_000,
    );
    child.kill('SIGTERM');
    assert.equal(await exited, 0, stdout);
    assert.match(stdout, /^\[[-\d :.]+\] INFO: Tessera is listening \{"url":"http:\/\/127\.0\.0\.1:\d+"/m);
    assert.match(stdout, /\] INFO: stopped\n$/);
    // eslint-disable-next-line no-control-regex -- ESC [ starts a terminal's colour code
    assert.doesNotMatch(stdout, /\x1b\[|\{"level":/);
  });

  it('an unknown LOG_FORMAT is a configuration error: exit 2, and the reason', async () => {
    const child = spawn(process.execPath, [TESSERA_MAIN, 'serve'], {
      cwd: dir,
      env: childEnvironment({ PORT: '0', DATABASE_URL: `sqlite:${join(dir, 'bad.db')}`, LOG_FORMAT: 'text' }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.add(child);
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const code = await new Promise<number | null>((resolve) => child.on('exit', (exitCode) => resolve(exitCode)));
    assert.equal(code, 2, stderr);
    assert.match(stderr, /LOG_FORMAT must be one of auto, json, pretty; got "text"/);
  });
});
