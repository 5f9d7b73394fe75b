import { spawn, type ChildProcess } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { after } from 'node:test';
import pg from 'pg';
import { errorProblems } from './assert.js';
import { appUrlOf, basic, bearer, parseJson, tokenRequestInit } from './http.js';
import { childEnvironment, startServerProcess, type ServerProcess } from './process.js';

/**
 * Helpers for tests that run several real `tessera` processes (servers and CLI invocations) over
 * one PostgreSQL database: a registry of child processes that after() hooks can end whatever
 * happened, the CLI as a process, and HTTP calls that never throw (a network error or a timeout
 * is an outcome to assert on, not an exception).
 */

/**
 * Cleanup steps of a test file's tests, run by `after()` whatever happened, last registered first;
 * the first error is thrown once every step has run. Call once per file, at its top level.
 */
export function cleanupsAfterAll(): (step: () => Promise<unknown>) => void {
  const steps: (() => Promise<unknown>)[] = [];
  after(async () => {
    let first: Error | undefined;
    for (const step of steps.reverse()) {
      try {
        await step();
      } catch (error) {
        first ??= error instanceof Error ? error : new Error(String(error));
      }
    }
    steps.length = 0;
    if (first !== undefined) throw first;
  });
  return (step) => void steps.push(step);
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Milliseconds on one monotonic clock, shared by every measurement of a test file. */
export const now = () => performance.now();

/** Every child process a test file started, so that its after() hook can end them all. */
export class Children {
  readonly #all = new Set<ChildProcess>();

  add(child: ChildProcess): void {
    this.#all.add(child);
    child.once('exit', () => this.#all.delete(child));
  }

  /** SIGKILL to every child still running; resolves once they have all exited (or after `ms`). */
  async killAll(ms = 5_000): Promise<void> {
    const running = [...this.#all].filter((child) => child.exitCode === null && child.signalCode === null);
    const exits = running.map((child) => new Promise<void>((resolve) => child.once('exit', () => resolve())));
    for (const child of running) child.kill('SIGKILL');
    await Promise.race([Promise.all(exits), sleep(ms)]);
    this.#all.clear();
  }

  /** Synchronous last resort for process.on('exit'). */
  killAllNow(): void {
    for (const child of this.#all) {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
  }
}

/** The children of a test file: killed by its after() hook, and when it exits, whatever happened. */
export function childrenOfFile(): Children {
  const children = new Children();
  after(() => children.killAll());
  process.once('exit', () => children.killAllNow());
  return children;
}

/** `tessera serve` (entry = a compiled src/cli/main.js) over `databaseUrl`, registered in `children`. */
export async function startTessera(
  children: Children,
  options: { entry: string; cwd: string; databaseUrl: string; env?: Record<string, string> },
): Promise<ServerProcess> {
  const server = await startServerProcess({
    entry: options.entry,
    cwd: options.cwd,
    env: { DATABASE_URL: options.databaseUrl, RATE_LIMITS: 'off', DEMO_APP: 'off', ...options.env },
  });
  children.add(server.child);
  return server;
}

/** Several at once; if one fails to start, the others are still registered (and so ended later). */
export async function startTesseras(
  children: Children,
  count: number,
  options: { entry: string; cwd: string; databaseUrl: string; env?: Record<string, string> },
): Promise<ServerProcess[]> {
  const results = await Promise.allSettled(Array.from({ length: count }, () => startTessera(children, options)));
  const failed = results.find((result): result is PromiseRejectedResult => result.status === 'rejected');
  if (failed !== undefined) throw failed.reason;
  return results.map((result) => (result as PromiseFulfilledResult<ServerProcess>).value);
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
  /** now() when the process had exited. */
  exitedAt: number;
}

/** A `tessera ARGS` process under way: the child (to kill), and its end. */
export interface RunningCli {
  child: ChildProcess;
  /** Resolves once the process has exited and its output is read; `signal` is set when a signal ended it. */
  ended: Promise<CliResult & { signal: NodeJS.Signals | null }>;
}

/** Starts `tessera ARGS` (entry = compiled main.js or bin/tessera), with DATABASE_URL set. */
export function startCli(
  children: Children,
  options: { entry: string; cwd: string; databaseUrl: string; env?: Record<string, string> },
  args: string[],
): RunningCli {
  const child = spawn(process.execPath, [options.entry, ...args], {
    cwd: options.cwd,
    env: childEnvironment({ DATABASE_URL: options.databaseUrl, ...options.env }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const ended = new Promise<CliResult & { signal: NodeJS.Signals | null }>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr, exitedAt: now() }));
  });
  return { child, ended };
}

/** `tessera ARGS` (entry = compiled main.js) to completion, with DATABASE_URL set. */
export async function runCli(
  children: Children,
  options: { entry: string; cwd: string; databaseUrl: string; env?: Record<string, string> },
  args: string[],
  timeoutMs = 15_000,
): Promise<CliResult> {
  const { child, ended } = startCli(children, options, args);
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      child.kill('SIGKILL');
      void ended.then(({ stderr }) =>
        reject(new Error(`tessera ${args.join(' ')} did not finish within ${timeoutMs} ms; stderr: ${stderr}`)),
      );
    }, timeoutMs);
  });
  try {
    const { signal: _signal, ...result } = await Promise.race([ended, timedOut]);
    return result;
  } finally {
    clearTimeout(timer);
  }
}

export interface CreatedApp {
  appId: string;
  appKey: string;
  clientId: string;
  clientSecret: string;
  adminId: string;
  name: string;
}

/** `tessera apps create --name NAME --json`, parsed; throws with the CLI's stderr if it failed. */
export async function createAppWithCli(
  children: Children,
  options: { entry: string; cwd: string; databaseUrl: string },
  name: string,
): Promise<CreatedApp> {
  const result = await runCli(children, options, ['apps', 'create', '--name', name, '--json']);
  if (result.code !== 0) throw new Error(`apps create exited ${result.code}: ${result.stderr}`);
  return JSON.parse(result.stdout) as CreatedApp;
}

/** One HTTP exchange, whatever came of it. `status` 0: no response (`error` says why). */
export interface Outcome {
  status: number;
  headers: Headers | undefined;
  body: any;
  text: string;
  /** The network error or the abort, e.g. "TimeoutError: …" or "TypeError: fetch failed (ECONNRESET)". */
  error: string | undefined;
  sentAt: number;
  receivedAt: number;
}

/** fetch with a deadline (AbortSignal.timeout); never throws. */
export async function call(url: string, init: RequestInit = {}, timeoutMs = 5_000): Promise<Outcome> {
  const sentAt = now();
  try {
    const response = await fetch(url, { ...init, signal: AbortSignal.timeout(timeoutMs) });
    const text = await response.text();
    const body = parseJson(text);
    return { status: response.status, headers: response.headers, body, text, error: undefined, sentAt, receivedAt: now() };
  } catch (error) {
    // fetch's network failures are a TypeError whose cause is the socket's error, with its code.
    const cause = (error as { cause?: Error & { code?: string } }).cause;
    const detail = cause === undefined ? '' : ` (${cause.code ?? cause.message})`;
    const described = `${(error as Error).name}: ${(error as Error).message}${detail}`;
    return { status: 0, headers: undefined, body: undefined, text: '', error: described, sentAt, receivedAt: now() };
  }
}

/** POST /api/apps/{appId}/oauth2/token with `Basic AppID:` and the credentials in a JSON body. */
export function tokenRequest(baseUrl: string, appId: string, clientId: string, clientSecret: string, timeoutMs?: number): Promise<Outcome> {
  const fields = { grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret };
  return call(`${appUrlOf(baseUrl, appId)}/oauth2/token`, tokenRequestInit(appId, fields), timeoutMs);
}

export function adminTokenRequest(baseUrl: string, app: { appId: string; clientId: string; clientSecret: string }): Promise<Outcome> {
  return tokenRequest(baseUrl, app.appId, app.clientId, app.clientSecret);
}

export function anonymousTokenRequest(baseUrl: string, app: { appId: string; appKey: string }): Promise<Outcome> {
  return tokenRequest(baseUrl, app.appId, app.appId, app.appKey);
}

/** GET /api/apps/{appId}/whoami with a bearer token, or with `Basic AppID:` when `token` is undefined. */
export function whoami(baseUrl: string, appId: string, token: string | undefined, timeoutMs?: number): Promise<Outcome> {
  return call(
    `${appUrlOf(baseUrl, appId)}/whoami`,
    { headers: { authorization: token === undefined ? basic(appId) : bearer(token) } },
    timeoutMs,
  );
}

/** "200", "401 invalid_client", "0 TypeError: fetch failed (ECONNRESET)": for messages and tallies. */
export function describeOutcome(outcome: Outcome): string {
  if (outcome.status === 0) return `0 ${outcome.error}`;
  const code = typeof outcome.body === 'object' && outcome.body !== null ? outcome.body.errorCode : undefined;
  return code === undefined ? String(outcome.status) : `${outcome.status} ${code}`;
}

/** Problems of a 503: the contract's SERVICE_UNAVAILABLE body and a positive integer Retry-After. */
export function unavailableProblems(outcome: Outcome): string[] {
  const problems = errorProblems(outcome, 503, 'SERVICE_UNAVAILABLE');
  const retryAfter = outcome.headers?.get('retry-after');
  if (retryAfter === null || retryAfter === undefined || !/^[1-9][0-9]*$/.test(retryAfter.trim())) {
    problems.push(`Retry-After is ${JSON.stringify(retryAfter)}, not a positive integer`);
  }
  return problems;
}

/**
 * A PostgreSQL connection of the test's own that LISTENs on the service's change channel, and
 * notes when each notification arrived: the moment a change was committed, as seen from outside.
 */
export class ChangeWatcher {
  readonly received: { payload: string; at: number }[] = [];
  #client: pg.Client | undefined;

  async start(databaseUrl: string, channel = 'tessera_changes'): Promise<void> {
    const client = new pg.Client({ connectionString: databaseUrl });
    client.on('error', () => {});
    client.on('notification', (message) => this.received.push({ payload: message.payload ?? '', at: now() }));
    await client.connect();
    await client.query(`LISTEN ${channel}`);
    this.#client = client;
  }

  /** When the first notification naming `payload` arrived after `since`, if one did. */
  firstAt(payload: string, since = -Infinity): number | undefined {
    return this.received.find((entry) => entry.payload === payload && entry.at >= since)?.at;
  }

  async stop(): Promise<void> {
    await this.#client?.end().catch(() => {});
    this.#client = undefined;
  }
}

/**
 * Loops that send requests until stopped, each checking its own outcomes. `body(loop)` runs one
 * iteration and returns nothing; the loops stop after the iteration in progress.
 */
export class Load {
  #running = false;
  #loops: Promise<void>[] = [];
  /** Errors thrown by an iteration itself (a bug of the test): reported by stop(). */
  readonly crashes: unknown[] = [];

  start(loops: number, body: (loop: number) => Promise<void>, pauseMs = 0): void {
    this.#running = true;
    for (let loop = 0; loop < loops; loop++) {
      this.#loops.push(
        (async () => {
          while (this.#running) {
            try {
              await body(loop);
            } catch (error) {
              this.crashes.push(error);
              return;
            }
            if (pauseMs > 0) await sleep(pauseMs);
          }
        })(),
      );
    }
  }

  get running(): boolean {
    return this.#running;
  }

  async stop(): Promise<void> {
    this.#running = false;
    await Promise.all(this.#loops);
    this.#loops = [];
  }
}

/** The exit of `server` and when it was seen (now()); rejects if it is still running after `ms`. */
export async function exitWithin(
  server: ServerProcess,
  ms: number,
): Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`tessera serve still running ${ms} ms after SIGTERM; stderr: ${server.stderr()}`)), ms);
  });
  try {
    return await Promise.race([server.exited.then((exit) => ({ ...exit, at: now() })), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** A JSON line of a server's log (LOG_FORMAT=json when piped): its level (30 info, 40 warn) and message, and its fields. */
export interface LogLine {
  level: number;
  msg: string;
  [field: string]: unknown;
}

/** The JSON lines the server has logged so far. */
export function logLines(server: ServerProcess): LogLine[] {
  return server
    .stdout()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as LogLine);
}

/** What `check` finds (anything but undefined), asked every 50 ms; rejects, naming `what`, after `ms`. */
export async function until<T>(what: string, ms: number, check: () => Promise<T | undefined> | T | undefined): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const found = await check();
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms: ${what}`);
    await sleep(50);
  }
}

/** SIGTERM, then the exit; rejects if the process is still running after `ms`. */
export async function terminate(server: ServerProcess, ms = 10_000): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  if (server.child.exitCode !== null || server.child.signalCode !== null) return server.exited;
  server.child.kill('SIGTERM');
  const { code, signal } = await exitWithin(server, ms);
  return { code, signal };
}

/** Resolves once PostgreSQL at `url` accepts a connection and answers a query; rejects after `ms`. */
export async function waitForPostgres(url: string, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  let last: unknown;
  while (Date.now() < deadline) {
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1_000 });
    client.on('error', () => {});
    try {
      await client.connect();
      await client.query('SELECT 1');
      await client.end();
      return;
    } catch (error) {
      last = error;
      await client.end().catch(() => {});
      await sleep(100);
    }
  }
  throw new Error(`PostgreSQL at ${url} still not accepting connections after ${ms} ms: ${(last as Error)?.message}`);
}
