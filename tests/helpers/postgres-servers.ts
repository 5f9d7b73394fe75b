import { execFile, execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { appendFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import pg from 'pg';
import { findExecutable, freePort } from './process.js';

/**
 * PostgreSQL servers of a test's own, beside the shared one on 5432: a primary, standbys streaming
 * from it (pg_basebackup -R), promotions and stops, as a failover or a switchover does them, with
 * their data in a temp folder and nothing left behind. Started as root, the servers run as the
 * `postgres` user (else `nobody`): PostgreSQL refuses to run as root.
 */

/** The folder of initdb, pg_ctl and pg_basebackup: pg_config's, else initdb's on the PATH, else Debian's newest. */
export function findPostgresBinaries(): string | undefined {
  const has = (dir: string) => ['initdb', 'pg_ctl', 'pg_basebackup'].every((name) => existsSync(join(dir, name)));
  const pgConfig = findExecutable('pg_config');
  if (pgConfig !== undefined) {
    try {
      const dir = execFileSync(pgConfig, ['--bindir'], { encoding: 'utf8' }).trim();
      if (has(dir)) return dir;
    } catch {
      // a pg_config without a server beside it
    }
  }
  const initdb = findExecutable('initdb');
  if (initdb !== undefined && has(dirname(realpathSync(initdb)))) return dirname(realpathSync(initdb));
  // Debian puts the server's programs in /usr/lib/postgresql/<major>/bin, off the PATH.
  const debian = '/usr/lib/postgresql';
  const majors = existsSync(debian) ? readdirSync(debian).filter((name) => /^[0-9]+$/.test(name)) : [];
  return majors
    .sort((a, b) => Number(b) - Number(a))
    .map((major) => join(debian, major, 'bin'))
    .find(has);
}

/**
 * A PostgreSQL primary of the test's own, with `database` created on it: a test that hangs it
 * (`pause`) or stops it leaves the shared server alone. `servers.stopAll()` ends it, whatever
 * happened (and the process's exit does if the test never gets there); if starting fails, nothing
 * is left running. Throws if PostgreSQL's server programs are not installed.
 */
export async function startOwnPostgres(
  name: string,
  database: string,
): Promise<{ servers: PostgresServers; postgres: PostgresServer; databaseUrl: string }> {
  const bin = findPostgresBinaries();
  if (bin === undefined) throw new Error('PostgreSQL server programs (initdb, pg_ctl) not found: apt-get install -y postgresql');
  const servers = new PostgresServers(bin);
  try {
    const postgres = await servers.startPrimary(name);
    const admin = new pg.Client({ connectionString: postgres.url() });
    await admin.connect();
    try {
      await admin.query(`CREATE DATABASE ${database}`);
    } finally {
      await admin.end();
    }
    return { servers, postgres, databaseUrl: postgres.url(database) };
  } catch (error) {
    await servers.stopAll();
    throw error;
  }
}

export interface PostgresServer {
  readonly name: string;
  readonly port: number;
  /** postgres://postgres@127.0.0.1:PORT/DATABASE (trust authentication). */
  url(database?: string): string;
  /** Promotes a standby to primary and waits until it is one. */
  promote(): Promise<void>;
  /** Stops it (`fast`: sessions ended with 57P01, as a switchover does; `immediate`: as a crash). */
  stop(mode?: 'fast' | 'immediate'): Promise<void>;
  /** Starts it again after a stop. */
  start(): Promise<void>;
  /**
   * Hangs it, as a machine or a volume that stops answering does: SIGSTOP to the postmaster and to
   * every process it started. Connections stay open and accept bytes; nothing answers.
   */
  pause(): void;
  /** SIGCONT to the processes `pause` stopped. */
  resume(): void;
  /** Its log so far, for failure messages. */
  log(): string;
}

/** Where the servers of one test live; `stopAll` stops every one still running and removes the folder. */
export class PostgresServers {
  readonly #dir: string;
  readonly #owner: { uid: number; gid: number } | undefined;
  readonly #servers: Server[] = [];

  constructor(private readonly bin: string) {
    this.#dir = mkdtempSync(join(tmpdir(), 'tessera-pg-servers-'));
    this.#owner = process.getuid?.() === 0 ? systemUser() : undefined;
    if (this.#owner !== undefined) chownSync(this.#dir, this.#owner.uid, this.#owner.gid);
    process.once('exit', () => this.#killAllNow());
  }

  /** A port to give a server later (a host named in a URL before it exists: a host that is down). */
  reservePort(): Promise<number> {
    return freePort();
  }

  /** A new primary (initdb, trust authentication, replication allowed from 127.0.0.1), started. */
  async startPrimary(name: string, port?: number): Promise<PostgresServer> {
    const server = this.#newServer(name, port ?? (await freePort()));
    await this.#run('initdb', ['-D', server.dataDir, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--locale=C', '--no-sync']);
    await server.configure();
    await server.start();
    return server;
  }

  /** A streaming standby of `primary` (pg_basebackup -R), started and accepting read-only sessions. */
  async startStandby(name: string, primary: PostgresServer, port?: number): Promise<PostgresServer> {
    const server = this.#newServer(name, port ?? (await freePort()));
    await this.#run('pg_basebackup', [
      '-h',
      '127.0.0.1',
      '-p',
      String(primary.port),
      '-U',
      'postgres',
      '-D',
      server.dataDir,
      '-R',
      '-X',
      'stream',
      '-c',
      'fast',
    ]);
    await server.configure();
    await server.start();
    return server;
  }

  async stopAll(): Promise<void> {
    for (const server of this.#servers) await server.stop('immediate').catch(() => server.killNow());
    rmSync(this.#dir, { recursive: true, force: true });
  }

  #newServer(name: string, port: number): Server {
    const server = new Server(name, port, join(this.#dir, name), (program, args) => this.#run(program, args));
    this.#servers.push(server);
    return server;
  }

  #run(program: string, args: string[]): Promise<string> {
    return new Promise((resolve, reject) => {
      execFile(
        join(this.bin, program),
        args,
        { cwd: this.#dir, timeout: 60_000, ...(this.#owner ?? {}), env: { ...process.env, LC_ALL: 'C', PGCONNECT_TIMEOUT: '5' } },
        (error, stdout, stderr) => {
          if (error === null) return resolve(stdout);
          reject(new Error(`${program} ${args.join(' ')}: ${error.message}\n${stdout}${stderr}`));
        },
      );
    });
  }

  #killAllNow(): void {
    for (const server of this.#servers) server.killNow();
  }
}

class Server implements PostgresServer {
  constructor(
    readonly name: string,
    readonly port: number,
    readonly dataDir: string,
    private readonly run: (program: string, args: string[]) => Promise<string>,
  ) {}

  #logPath(): string {
    return `${this.dataDir}.log`;
  }

  url(database = 'postgres'): string {
    return `postgres://postgres@127.0.0.1:${this.port}/${database}`;
  }

  /** Settings for a small, fast, throwaway server; the last line of a setting wins. */
  async configure(): Promise<void> {
    const settings = [
      `port = ${this.port}`,
      "listen_addresses = '127.0.0.1'",
      `unix_socket_directories = '${dirname(this.dataDir)}'`,
      'max_connections = 60',
      'shared_buffers = 16MB',
      'fsync = off',
      'wal_level = replica',
      'max_wal_senders = 5',
      'hot_standby = on',
      "log_min_messages = 'warning'",
    ];
    await appendFile(join(this.dataDir, 'postgresql.conf'), `\n${settings.join('\n')}\n`);
  }

  async start(): Promise<void> {
    await this.run('pg_ctl', ['-D', this.dataDir, '-l', this.#logPath(), '-w', '-t', '30', 'start']);
  }

  async promote(): Promise<void> {
    await this.run('pg_ctl', ['-D', this.dataDir, '-w', '-t', '30', 'promote']);
  }

  async stop(mode: 'fast' | 'immediate' = 'fast'): Promise<void> {
    this.resume();
    if (this.#pid() === undefined) return;
    await this.run('pg_ctl', ['-D', this.dataDir, '-m', mode, '-w', '-t', '30', 'stop']);
  }

  #paused: number[] = [];

  pause(): void {
    const postmaster = this.#pid();
    if (postmaster === undefined) throw new Error(`${this.name} is not running`);
    process.kill(postmaster, 'SIGSTOP');
    // Its children, once it can start no more of them.
    this.#paused = [postmaster, ...childrenOf(postmaster)];
    for (const pid of this.#paused.slice(1)) process.kill(pid, 'SIGSTOP');
  }

  resume(): void {
    for (const pid of this.#paused.reverse()) {
      try {
        process.kill(pid, 'SIGCONT');
      } catch {
        // a child that ended meanwhile
      }
    }
    this.#paused = [];
  }

  log(): string {
    try {
      return readFileSync(this.#logPath(), 'utf8');
    } catch {
      return '';
    }
  }

  /** The postmaster's PID, from postmaster.pid, while it runs. */
  #pid(): number | undefined {
    try {
      const pid = Number(readFileSync(join(this.dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
      process.kill(pid, 0);
      return pid;
    } catch {
      return undefined;
    }
  }

  /** SIGQUIT to the postmaster (an immediate shutdown): the synchronous last resort. */
  killNow(): void {
    this.resume();
    const pid = this.#pid();
    if (pid !== undefined) process.kill(pid, 'SIGQUIT');
  }
}

/** The processes whose parent is `pid`, from /proc. */
function childrenOf(pid: number): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^[0-9]+$/.test(entry))
    .filter((entry) => {
      try {
        // pid (comm) state ppid …: comm may hold spaces and parentheses, so read after its last ')'.
        const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
        return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid;
      } catch {
        return false;
      }
    })
    .map(Number);
}

/** The user a server runs as when the tests run as root: `postgres` if there is one, else `nobody`. */
function systemUser(): { uid: number; gid: number } {
  const users = readFileSync('/etc/passwd', 'utf8').split('\n');
  for (const name of ['postgres', 'nobody']) {
    const fields = users.find((line) => line.startsWith(`${name}:`))?.split(':');
    if (fields !== undefined) return { uid: Number(fields[2]), gid: Number(fields[3]) };
  }
  return { uid: 65534, gid: 65534 };
}
