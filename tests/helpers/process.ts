import { currentBuild } from 'tessera-tokens/internal/release.js';
import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { connect, createServer } from 'node:net';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SECRET_SETTINGS } from '../../src/config.js';

// This file compiles to <root>/<outDir>/tests/helpers/process.js.
/** The compiled CLI, `<outDir>/src/cli/main.js`, for tests that spawn `tessera`. */
export const TESSERA_MAIN = fileURLToPath(new URL('../../src/cli/main.js', import.meta.url));
/** The repository's root. */
export const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));
/** The `tessera` command of the checkout (`bin/tessera`), as an operator runs it. */
/** The application_name of every PostgreSQL connection of this build's (src/store/postgres/connection.ts). */
export const TESSERA_APPLICATION_NAME = `tessera/${currentBuild().version}`;

export const TESSERA_BIN = fileURLToPath(new URL('../../../bin/tessera', import.meta.url));

/** Settings a child process must not inherit from whoever runs the tests. */
const CONFIG_VARIABLES = [
  'PORT',
  'HOST',
  'DATABASE_URL',
  'DATABASE_DIRECT_URL',
  'LOG_LEVEL',
  'LOG_FORMAT',
  'LOG_REQUESTS',
  'RATE_LIMITS',
  'RATE_LIMIT_TOKEN_PER_ADDRESS',
  'RATE_LIMIT_ADMIN_FAILURES_PER_ADDRESS',
  'RATE_LIMIT_ADMIN_FAILURES_PER_APP',
  'DEMO_APP',
  'PUBLIC_URL',
  'PG_POOL_SIZE',
  'PG_CONNECT_TIMEOUT_MS',
  'PG_QUERY_TIMEOUT_MS',
  'PG_STARTUP_TIMEOUT_MS',
  'REDIS_URL',
  'REDIS_KEY_PREFIX',
  'TRUSTED_PROXIES',
  'HTTP_HEADERS_TIMEOUT_MS',
  'HTTP_REQUEST_TIMEOUT_MS',
  'HTTP_KEEP_ALIVE_TIMEOUT_MS',
  'HOUSEKEEPING_INTERVAL_SECONDS',
  'EVENTS_RETENTION_DAYS',
  'EVENTS_MAX_PER_APP',
  'EVENTS_MAX_REFUSALS_PER_APP',
  'FORWARD_AUTH_ADMIN_PATHS',
  'METRICS_PORT',
  'METRICS_HOST',
  'SMTP_URL',
  'MAIL_FROM',
  'SHUTDOWN_STORE_TIMEOUT_MS',
  ...SECRET_SETTINGS.map((name) => `${name}_FILE`),
];

/** The environment for a child `tessera` process: this one's, minus Tessera's settings, plus `extra`. */
export function childEnvironment(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of CONFIG_VARIABLES) delete env[name];
  // OpenTelemetry's standard variables turn tracing on: a test that wants it sets them.
  for (const name of Object.keys(env)) if (name.startsWith('OTEL_')) delete env[name];
  delete env.NODE_TEST_CONTEXT; // a child must not think it is a test runner's worker
  return { ...env, ...extra };
}

/** A TCP port on 127.0.0.1 that was free a moment ago. */
export async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve, reject) => probe.once('error', reject).listen(0, '127.0.0.1', resolve));
  const address = probe.address();
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

export interface ServerProcess {
  child: ChildProcess;
  /** e.g. http://127.0.0.1:40123, read from the server's own "listening" log line. */
  baseUrl: string;
  stdout(): string;
  stderr(): string;
  /** Resolves with the exit code and signal once the process has ended. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * `tessera serve` as a child process on a port the kernel picks (PORT=0), so that concurrent test
 * runs can never race for a port; resolves once the server has logged the URL it listens on.
 * `entry` is `bin/tessera` or a compiled `src/cli/main.js`. `env` must not set LOG_LEVEL above info.
 */
export async function startServerProcess(options: {
  entry: string;
  cwd: string;
  env?: Record<string, string>;
  timeoutMs?: number;
}): Promise<ServerProcess> {
  const child = spawn(process.execPath, [options.entry, 'serve'], {
    cwd: options.cwd,
    env: childEnvironment({ HOST: '127.0.0.1', PORT: '0', ...options.env }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on('exit', (code, signal) => resolve({ code, signal }));
  });
  const deadline = Date.now() + (options.timeoutMs ?? 15_000);
  for (;;) {
    const url = listeningUrl(stdout);
    if (url !== undefined) return { child, baseUrl: url, stdout: () => stdout, stderr: () => stderr, exited };
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`tessera serve exited early (${child.exitCode ?? child.signalCode}); stderr: ${stderr}; stdout: ${stdout}`);
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`tessera serve did not start in time; stderr: ${stderr}; stdout: ${stdout}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

function listeningUrl(stdout: string): string | undefined {
  for (const line of stdout.split('\n')) {
    if (!line.includes('"Tessera is listening"')) continue;
    try {
      return (JSON.parse(line) as { url?: string }).url;
    } catch {
      return undefined;
    }
  }
  return undefined;
}

/** An executable `name` on the PATH, else in /usr/sbin (where Debian puts daemons, often off a user's PATH). */
export function findExecutable(name: string): string | undefined {
  const onPath = (process.env.PATH ?? '').split(delimiter).filter((dir) => dir !== '');
  return [...onPath.map((dir) => join(dir, name)), join('/usr/sbin', name)].find((path) => {
    try {
      accessSync(path, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

/** Whether something accepts TCP connections on 127.0.0.1:`port` now. */
export function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
