import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { accessSync, chownSync, constants, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { accepts, findExecutable, freePort } from './process.js';

/**
 * A high-availability PostgreSQL as operators build it from Debian's packages, all on 127.0.0.1 with
 * its data in one temp dir: one etcd (etcd-server), two Patroni nodes (patroni) each running a
 * PostgreSQL 15 in synchronous replication (`synchronous_mode`), and HAProxy (haproxy) routing to
 * whichever node Patroni's REST API says is the primary (`GET /primary`). Every process is stopped
 * by its PID.
 */

/**
 * Patroni's timings (seconds). A crashed primary is replaced about ttl after its last leader-key
 * update, so ttl is what a crash costs; the test keeps it short, under the smallest ttl Patroni's
 * documentation gives (20; Debian's Patroni 3.0 takes less), but within its rule
 * loop_wait + 2 × retry_timeout ≤ ttl, and with retry_timeout at its documented minimum (3).
 */
export const PATRONI_TIMINGS = { ttl: 8, loop_wait: 1, retry_timeout: 3 } as const;

/** The HAProxy health check of each node: how soon a primary that stops answering /primary is dropped. */
const CHECK = 'inter 500ms fastinter 200ms downinter 500ms fall 2 rise 1';

export interface HaBinaries {
  etcd: string;
  patroni: string;
  patronictl: string;
  haproxy: string;
  /** The directory of PostgreSQL's server binaries (postgres, initdb, pg_ctl, pg_basebackup). */
  postgresBinDir: string;
}

/** A directory holding PostgreSQL's server binaries: where `postgres` is on the PATH, else Debian's newest /usr/lib/postgresql/N/bin. */
function findPostgresBinDir(): string | undefined {
  const executable = (path: string) => {
    try {
      accessSync(path, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  };
  const candidates: string[] = [];
  const onPath = findExecutable('postgres');
  if (onPath !== undefined) candidates.push(join(onPath, '..'));
  try {
    const versions = readdirSync('/usr/lib/postgresql')
      .filter((name) => /^[0-9]+$/.test(name))
      .sort((a, b) => Number(b) - Number(a));
    candidates.push(...versions.map((version) => join('/usr/lib/postgresql', version, 'bin')));
  } catch {
    // not Debian's layout
  }
  return candidates.find((dir) => ['postgres', 'initdb', 'pg_ctl', 'pg_basebackup'].every((name) => executable(join(dir, name))));
}

/** The binaries of the cluster; throws, naming what is missing and the packages that hold it, if one is not installed. */
export function findHaBinaries(): HaBinaries {
  const found = {
    etcd: findExecutable('etcd'),
    patroni: findExecutable('patroni'),
    patronictl: findExecutable('patronictl'),
    haproxy: findExecutable('haproxy'),
    postgresBinDir: findPostgresBinDir(),
  };
  const missing = Object.entries(found)
    .filter(([, path]) => path === undefined)
    .map(([name]) => (name === 'postgresBinDir' ? 'the PostgreSQL server (postgres, initdb, pg_ctl, pg_basebackup)' : name));
  if (missing.length > 0) {
    throw new Error(
      `The high-availability tests need ${missing.join(', ')}, not found (on the PATH, in /usr/sbin, /usr/lib/postgresql/N/bin). ` +
        'Install them: apt-get install -y etcd-server patroni haproxy postgresql',
    );
  }
  return found as HaBinaries;
}

/** The user PostgreSQL runs as: as root, `postgres` if there is one, else `nobody`; otherwise the current user. */
function postgresUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  for (const name of ['postgres', 'nobody']) {
    try {
      const id = (flag: string) => Number(execFileSync('id', [flag, name], { encoding: 'utf8' }).trim());
      return { uid: id('-u'), gid: id('-g') };
    } catch {
      // no such user
    }
  }
  throw new Error('running as root, and neither a postgres nor a nobody user to run PostgreSQL as');
}

export interface PatroniNode {
  name: string;
  /** PostgreSQL's port, and Patroni's REST API's. */
  pgPort: number;
  apiPort: number;
  /** Whether its Patroni process is running (a crashed node's is not). */
  running(): boolean;
}

export interface HaCluster {
  nodes: PatroniNode[];
  /** The port HAProxy listens on: it routes to the primary. */
  haproxyPort: number;
  /** `postgres://postgres@127.0.0.1:<HAProxy>/<database>`: the primary, through HAProxy. */
  urlFor(database: string): string;
  /** `postgres://postgres@127.0.0.1:<node>/<database>`: one node, directly (for multi-host URLs). */
  nodeUrlFor(node: PatroniNode, database: string): string;
  /** `postgres://postgres@127.0.0.1:<node1>,127.0.0.1:<node2>/<database>?<parameters>`: every node, directly, as libpq reads several hosts. */
  multiHostUrlFor(database: string, parameters: Record<string, string>): string;
  /** The node whose REST API answers 200 to GET /primary now, if one does. */
  primary(): Promise<PatroniNode | undefined>;
  /** Resolves once a primary and a synchronous standby are up and HAProxy routes to the primary; rejects after `ms`. */
  waitForSyncPair(ms?: number): Promise<{ primary: PatroniNode; standby: PatroniNode }>;
  /** `patronictl switchover --force` (a planned switchover to the synchronous standby); resolves with its output once it returns. */
  switchover(): Promise<string>;
  /** kill -9 of the primary's Patroni, its postmaster and every PostgreSQL process under it, at once (a node crash). */
  crashPrimary(): Promise<PatroniNode>;
  /** Starts a crashed node's Patroni again; it rejoins as a replica. */
  restart(node: PatroniNode): void;
  /** The output of every process so far, for failure messages. */
  log(): string;
  /** Stops every process (Patroni cleanly first, then kill -9 whatever remains) and removes the temp dir. */
  stop(): Promise<void>;
}

interface NodeState extends PatroniNode {
  dir: string;
  dataDir: string;
  configPath: string;
  child: ChildProcess | undefined;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** GET http://127.0.0.1:`port``path`: the status, 0 when nothing answered within `ms`. */
async function httpStatus(port: number, path: string, ms = 1_000): Promise<number> {
  try {
    const response = await fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(ms) });
    await response.arrayBuffer();
    return response.status;
  } catch {
    return 0;
  }
}

function alive(child: ChildProcess | undefined): child is ChildProcess {
  return child !== undefined && child.exitCode === null && child.signalCode === null;
}

/** PIDs whose parent is `pid` (Linux's /proc). */
function childPids(pid: number): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^[0-9]+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // pid (comm) state ppid …: comm may hold spaces and parentheses, so read after the last ')'.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) found.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

/** The postmaster's PID from `dataDir`/postmaster.pid, if it is there and that process runs. */
function postmasterPid(dataDir: string): number | undefined {
  try {
    const pid = Number(readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
    if (!Number.isInteger(pid) || pid <= 0) return undefined;
    process.kill(pid, 0);
    return pid;
  } catch {
    return undefined;
  }
}

function killNow(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

/** A tail of `text`, for messages. */
const tail = (text: string, chars = 6_000) => (text.length > chars ? `…${text.slice(-chars)}` : text);

/**
 * Starts the cluster and resolves once a primary and its synchronous standby are up and HAProxy
 * routes to the primary. `scope`: the name of the Patroni cluster; `timings`: Patroni's, instead of
 * PATRONI_TIMINGS (to measure what the defaults, ttl 30, loop_wait 10, retry_timeout 10, cost).
 */
export async function startHaCluster(
  binaries: HaBinaries,
  options: { scope?: string; startMs?: number; timings?: { ttl: number; loop_wait: number; retry_timeout: number } } = {},
): Promise<HaCluster> {
  const scope = options.scope ?? 'tessera';
  const runAs = postgresUser();
  const dir = mkdtempSync(join(tmpdir(), 'tessera-ha-'));
  if (runAs !== undefined) chownSync(dir, runAs.uid, runAs.gid);
  const ports = await Promise.all(Array.from({ length: 7 }, () => freePort()));
  const [etcdPort, etcdPeerPort, haproxyPort] = ports as [number, number, number];
  const nodePorts = ports.slice(3);
  const outputs = new Map<string, string>();
  const capture = (name: string, child: ChildProcess) => {
    const append = (chunk: string) => outputs.set(name, tail(`${outputs.get(name) ?? ''}${chunk}`, 200_000));
    child.stdout?.setEncoding('utf8').on('data', append);
    child.stderr?.setEncoding('utf8').on('data', append);
    child.once('exit', (code, signal) => append(`[exited: ${code ?? signal}]\n`));
  };
  const log = () => [...outputs].map(([name, text]) => `--- ${name}\n${tail(text)}`).join('\n');

  const processes: ChildProcess[] = [];
  const start = (name: string, command: string, args: string[], as?: { uid: number; gid: number; home: string }) => {
    const child = spawn(command, args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(as === undefined ? {} : { uid: as.uid, gid: as.gid }),
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C.UTF-8', ...(as === undefined ? {} : { HOME: as.home }) },
    });
    capture(name, child);
    processes.push(child);
    return child;
  };

  // etcd: one member, as Patroni's DCS (its v3 API).
  const etcdUrl = `http://127.0.0.1:${etcdPort}`;
  const peerUrl = `http://127.0.0.1:${etcdPeerPort}`;
  start('etcd', binaries.etcd, [
    '--name',
    'etcd',
    '--data-dir',
    join(dir, 'etcd'),
    '--listen-client-urls',
    etcdUrl,
    '--advertise-client-urls',
    etcdUrl,
    '--listen-peer-urls',
    peerUrl,
    '--initial-advertise-peer-urls',
    peerUrl,
    '--initial-cluster',
    `etcd=${peerUrl}`,
    '--initial-cluster-state',
    'new',
  ]);

  const nodes: NodeState[] = [0, 1].map((index) => {
    const name = `node${index + 1}`;
    const pgPort = nodePorts[2 * index]!;
    const apiPort = nodePorts[2 * index + 1]!;
    const nodeDir = join(dir, name);
    mkdirSync(nodeDir, { mode: 0o700 });
    if (runAs !== undefined) chownSync(nodeDir, runAs.uid, runAs.gid);
    const dataDir = join(nodeDir, 'data');
    // JSON is YAML: Patroni reads it as its configuration file.
    const config = {
      scope,
      name,
      restapi: { listen: `127.0.0.1:${apiPort}`, connect_address: `127.0.0.1:${apiPort}` },
      etcd3: { hosts: `127.0.0.1:${etcdPort}`, protocol: 'http' },
      log: { level: 'INFO' },
      bootstrap: {
        dcs: {
          ...(options.timings ?? PATRONI_TIMINGS),
          maximum_lag_on_failover: 1048576,
          synchronous_mode: true,
          postgresql: {
            use_pg_rewind: true,
            use_slots: true,
            parameters: {
              wal_level: 'replica',
              hot_standby: 'on',
              wal_log_hints: 'on',
              max_connections: 100,
              max_wal_senders: 10,
              max_replication_slots: 10,
              wal_keep_size: '128MB',
            },
          },
        },
        initdb: [{ encoding: 'UTF8' }, { locale: 'C' }, { 'auth-local': 'trust' }, { 'auth-host': 'trust' }],
      },
      postgresql: {
        listen: `127.0.0.1:${pgPort}`,
        connect_address: `127.0.0.1:${pgPort}`,
        data_dir: dataDir,
        bin_dir: binaries.postgresBinDir,
        pgpass: join(nodeDir, 'pgpass'),
        authentication: {
          superuser: { username: 'postgres' },
          replication: { username: 'postgres' },
          rewind: { username: 'postgres' },
        },
        parameters: { unix_socket_directories: nodeDir, shared_buffers: '32MB' },
        pg_hba: ['local all all trust', 'host all all 127.0.0.1/32 trust', 'host replication all 127.0.0.1/32 trust'],
      },
    };
    const configPath = join(nodeDir, 'patroni.yml');
    writeFileSync(configPath, `${JSON.stringify(config, null, 2)}\n`);
    return { name, pgPort, apiPort, dir: nodeDir, dataDir, configPath, child: undefined, running: () => false };
  });
  for (const node of nodes) node.running = () => alive(node.child);

  const startPatroni = (node: NodeState) => {
    node.child = start(node.name, binaries.patroni, [node.configPath], runAs === undefined ? undefined : { ...runAs, home: node.dir });
  };

  const haproxyConfig = [
    'global',
    '  maxconn 500',
    'defaults',
    '  mode tcp',
    '  timeout connect 1s',
    '  timeout client 30m',
    '  timeout server 30m',
    '  timeout check 1s',
    'listen primary',
    `  bind 127.0.0.1:${haproxyPort}`,
    '  option httpchk GET /primary',
    '  http-check expect status 200',
    `  default-server ${CHECK} on-marked-down shutdown-sessions`,
    ...nodes.map((node) => `  server ${node.name} 127.0.0.1:${node.pgPort} check port ${node.apiPort}`),
    '',
  ].join('\n');
  const haproxyConfigPath = join(dir, 'haproxy.cfg');
  writeFileSync(haproxyConfigPath, haproxyConfig);

  const url = (port: number, database: string) => `postgres://postgres@127.0.0.1:${port}/${encodeURIComponent(database)}`;

  const primary = async (): Promise<PatroniNode | undefined> => {
    const statuses = await Promise.all(nodes.map((node) => httpStatus(node.apiPort, '/primary')));
    return nodes.find((_, index) => statuses[index] === 200);
  };

  /** Whether a connection through HAProxy reaches a PostgreSQL that is not in recovery. */
  const routesToPrimary = async (): Promise<boolean> => {
    const client = new pg.Client({ connectionString: url(haproxyPort, 'postgres'), connectionTimeoutMillis: 1_000 });
    client.on('error', () => {});
    try {
      await client.connect();
      const result = await client.query<{ recovery: boolean }>('SELECT pg_is_in_recovery() AS recovery');
      return result.rows[0]?.recovery === false;
    } catch {
      return false;
    } finally {
      await client.end().catch(() => {});
    }
  };

  /** `everyNodeRunning`: fail at once if a node's Patroni has exited (at start-up, when nothing was crashed). */
  const waitForSyncPair = async (ms = 30_000, everyNodeRunning = false) => {
    const deadline = Date.now() + ms;
    for (;;) {
      const exited = nodes.find((node) => !alive(node.child));
      if (everyNodeRunning && exited !== undefined) throw new Error(`Patroni's ${exited.name} exited\n${log()}`);
      const [leader, sync] = await Promise.all([
        Promise.all(nodes.map((node) => httpStatus(node.apiPort, '/primary'))),
        Promise.all(nodes.map((node) => httpStatus(node.apiPort, '/sync'))),
      ]);
      const primaryNode = nodes.find((_, index) => leader[index] === 200);
      const standby = nodes.find((_, index) => sync[index] === 200 && leader[index] !== 200);
      if (primaryNode !== undefined && standby !== undefined && (await routesToPrimary())) return { primary: primaryNode, standby };
      if (Date.now() > deadline) {
        throw new Error(
          `no primary with a synchronous standby behind HAProxy within ${ms} ms (GET /primary: ${leader.join(', ')}; GET /sync: ${sync.join(', ')})\n${log()}`,
        );
      }
      await sleep(200);
    }
  };

  /** Every process of the cluster at once, by PID, and its dir: for a test process that exits without its after() hooks. */
  const killAllNow = () => {
    for (const node of nodes) {
      const postmaster = postmasterPid(node.dataDir);
      if (postmaster !== undefined) for (const pid of [...childPids(postmaster), postmaster]) killNow(pid);
    }
    for (const child of processes.filter(alive)) child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', killAllNow);

  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    process.removeListener('exit', killAllNow);
    // Patroni first, cleanly (it stops its PostgreSQL), with a bound; then whatever remains, by PID.
    const patronis = nodes.map((node) => node.child).filter(alive);
    const exits = patronis.map((child) => new Promise<void>((resolve) => child.once('exit', () => resolve())));
    for (const child of patronis) child.kill('SIGTERM');
    await Promise.race([Promise.all(exits), sleep(3_000)]);
    for (const node of nodes) {
      if (alive(node.child)) node.child.kill('SIGKILL');
      const postmaster = postmasterPid(node.dataDir);
      if (postmaster !== undefined) {
        for (const pid of childPids(postmaster)) killNow(pid);
        killNow(postmaster);
      }
    }
    const rest = processes.filter(alive);
    const restExits = rest.map((child) => new Promise<void>((resolve) => child.once('exit', () => resolve())));
    for (const child of rest) child.kill('SIGTERM');
    await Promise.race([Promise.all(restExits), sleep(3_000)]);
    for (const child of processes.filter(alive)) child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  };

  try {
    const etcdDeadline = Date.now() + 10_000;
    while ((await httpStatus(etcdPort, '/health')) !== 200) {
      if (!alive(processes[0]) || Date.now() > etcdDeadline) throw new Error(`etcd did not become healthy on port ${etcdPort}\n${log()}`);
      await sleep(50);
    }
    // Both at once: one wins the race to bootstrap the cluster (initdb), the other copies it (pg_basebackup).
    for (const node of nodes) startPatroni(node);
    const bootstrapDeadline = Date.now() + (options.startMs ?? 30_000);
    const haproxy = start('haproxy', binaries.haproxy, ['-db', '-f', haproxyConfigPath]);
    const haproxyDeadline = Date.now() + 5_000;
    while (!(await accepts(haproxyPort))) {
      if (!alive(haproxy) || Date.now() > haproxyDeadline) throw new Error(`HAProxy did not listen on port ${haproxyPort}\n${log()}`);
      await sleep(20);
    }
    await waitForSyncPair(Math.max(5_000, bootstrapDeadline - Date.now()), true);
  } catch (error) {
    await stop();
    throw error;
  }

  return {
    nodes,
    haproxyPort,
    urlFor: (database) => url(haproxyPort, database),
    nodeUrlFor: (node, database) => url(node.pgPort, database),
    multiHostUrlFor: (database, parameters) =>
      `postgres://postgres@${nodes.map((node) => `127.0.0.1:${node.pgPort}`).join(',')}/${encodeURIComponent(database)}` +
      `?${new URLSearchParams(parameters).toString()}`,
    primary,
    waitForSyncPair,
    async switchover() {
      const { stdout, stderr } = await promisify(execFile)(
        binaries.patronictl,
        ['-c', nodes[0]!.configPath, 'switchover', '--force', scope],
        { timeout: 60_000, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C.UTF-8', HOME: dir } },
      );
      if (!/Successfully switched over/i.test(stdout)) throw new Error(`patronictl switchover did not switch over:\n${stdout}${stderr}`);
      return stdout;
    },
    async crashPrimary() {
      const found = await primary();
      const node = nodes.find((candidate) => candidate === found);
      if (node === undefined) throw new Error(`no primary to crash\n${log()}`);
      const postmaster = postmasterPid(node.dataDir);
      if (postmaster === undefined || !alive(node.child)) throw new Error(`the primary ${node.name} has no running PostgreSQL or Patroni`);
      const victims = [node.child.pid!, postmaster, ...childPids(postmaster)];
      for (const pid of victims) killNow(pid);
      return node;
    },
    restart(node) {
      const state = nodes.find((candidate) => candidate === node);
      if (state === undefined || alive(state.child)) throw new Error(`${node.name} is not a crashed node of this cluster`);
      startPatroni(state);
    },
    log,
    stop,
  };
}
