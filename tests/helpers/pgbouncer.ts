import { spawn } from 'node:child_process';
import { chownSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { accepts, findExecutable, freePort } from './process.js';

/** The pgbouncer binary, on the PATH or in /usr/sbin. */
export const findPgbouncer = (): string | undefined => findExecutable('pgbouncer');

export interface RunningPgbouncer {
  /** `databaseUrl` (a database on the PostgreSQL PgBouncer was started for) as reached through PgBouncer. */
  urlFor(databaseUrl: string): string;
  /** PgBouncer's log so far, for failure messages. */
  log(): string;
  /**
   * How many of its server connections it has closed so far for a reason of the server's or the
   * client's, not of its own timers. A terminated connection is mostly logged "server conn crashed?",
   * but the reason depends on what the pooler was doing with it (CI once saw 4 such lines for 13
   * pooled connections terminated), so every close but the timers' counts.
   */
  serverConnectionsLost(): number;
  /** Stops PgBouncer by its PID and removes its directory. */
  stop(): Promise<void>;
}

/**
 * PgBouncer in transaction mode in front of the PostgreSQL of `postgresUrl` (its host, port and user),
 * on a free port of 127.0.0.1, every database passed through, no password asked (trust), its
 * configuration and log in a fresh temp dir. Few server connections, so that clients share them.
 * `ignoreStartupParameters`: PgBouncer's setting of that name (by default none, as installed).
 * `serverLoginRetrySeconds`: `server_login_retry`, how long PgBouncer refuses every client of a pool
 * ("server login has been failing") after it failed to open a server connection (15 by default).
 */
export async function startPgbouncer(
  binary: string,
  postgresUrl: string,
  options: { ignoreStartupParameters?: string[]; serverLoginRetrySeconds?: number } = {},
): Promise<RunningPgbouncer> {
  const target = new URL(postgresUrl);
  const user = decodeURIComponent(target.username || 'postgres');
  const dir = mkdtempSync(join(tmpdir(), 'tessera-pgbouncer-'));
  // PgBouncer refuses to run as root; started as root, it becomes the user it is told to.
  const runAs = process.getuid?.() === 0 ? 'nobody' : undefined;
  if (runAs !== undefined) chownSync(dir, 65534, 65534);
  const port = await freePort();
  const logPath = join(dir, 'pgbouncer.log');
  writeFileSync(join(dir, 'userlist.txt'), `"${user}" ""\n`);
  const config = [
    '[databases]',
    `* = host=${target.hostname} port=${target.port || '5432'}`,
    '[pgbouncer]',
    'listen_addr = 127.0.0.1',
    `listen_port = ${port}`,
    'unix_socket_dir =',
    'auth_type = trust',
    `auth_file = ${join(dir, 'userlist.txt')}`,
    'pool_mode = transaction',
    'default_pool_size = 4',
    'max_client_conn = 200',
    `logfile = ${logPath}`,
    options.ignoreStartupParameters === undefined ? '' : `ignore_startup_parameters = ${options.ignoreStartupParameters.join(',')}`,
    options.serverLoginRetrySeconds === undefined ? '' : `server_login_retry = ${options.serverLoginRetrySeconds}`,
    runAs === undefined ? '' : `user = ${runAs}`,
    '',
  ].join('\n');
  const configPath = join(dir, 'pgbouncer.ini');
  writeFileSync(configPath, config);

  let output = '';
  const child = spawn(binary, [configPath], { stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const log = () => {
    try {
      return `${output}${readFileSync(logPath, 'utf8')}`;
    } catch {
      return output;
    }
  };
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) {
      // SIGINT: PgBouncer closes its connections and exits at once (SIGTERM waits for clients).
      process.kill(child.pid, 'SIGINT');
      const timer = setTimeout(() => child.kill('SIGKILL'), 3_000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(dir, { recursive: true, force: true });
  };

  const deadline = Date.now() + 5_000;
  while (!(await accepts(port))) {
    if (child.exitCode !== null || child.signalCode !== null || Date.now() > deadline) {
      const reason = child.exitCode !== null || child.signalCode !== null ? 'exited' : `did not listen on port ${port} within 5 s`;
      const logged = log();
      await stop();
      throw new Error(`pgbouncer ${reason}\nconfig:\n${config}\nlog:\n${logged}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return {
    urlFor(databaseUrl) {
      const url = new URL(databaseUrl);
      url.hostname = '127.0.0.1';
      url.port = String(port);
      return url.toString();
    },
    log,
    serverConnectionsLost() {
      let logged: string;
      try {
        logged = readFileSync(logPath, 'utf8');
      } catch {
        return 0;
      }
      return logged
        .split('\n')
        .filter((line) => / S-0x[0-9a-f]+: .* closing because: (?!server idle timeout|server lifetime over)/.test(line)).length;
    },
    stop,
  };
}
