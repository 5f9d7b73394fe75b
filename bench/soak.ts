/**
 * `npm run soak [-- --minutes N] [--connections N] [--postgres]`: `tessera serve` on a fresh store
 * under a steady mixed load for N minutes (default 10): tokens issued, checked (whoami), revoked, and
 * left to expire for housekeeping. Every 10 s it samples the server's RSS (/proc/PID/status) and the
 * store; the server itself reports its event-loop delay and heap (bench/soak-probe.ts, preloaded
 * with --import). Writes bench/results/soak-<time>.json; a run of 10 minutes or more also writes
 * docs/soak.svg and the figures in docs/soak.md (`--report FILE` redoes those from a saved run).
 * Needs wrk and taskset, like the benchmark. Not a test: it loads the machine for the whole run.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import Database from 'libsql';
import pg from 'pg';
import {
  cpuAvailability,
  LOAD_CORE,
  memoryOf,
  MEASURED_SERVER_ENV,
  requireTools,
  runWrk,
  sleep,
  startPinnedServer,
  type RunningServer,
} from './processes.js';
import type { ProbeLine } from './soak-probe.js';
import { soakChart, soakFigures, verdictOf, writeSoakDoc, type LoadTotals, type SoakRun, type SoakSample } from './soak-report.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const DIST = fileURLToPath(new URL('../', import.meta.url));
const MAIN = join(DIST, 'src', 'cli', 'main.js');
const PROBE = fileURLToPath(new URL('./soak-probe.js', import.meta.url));
const WRK_SCRIPT = join(ROOT, 'bench', 'wrk', 'soak.lua');
/** A run this long or longer is the documented soak: it rewrites docs/soak.md and docs/soak.svg. */
const DOCUMENTED_MINUTES = 10;

interface Options {
  minutes: number;
  connections: number;
  postgres: boolean;
  sampleSeconds: number;
  /** Lifetime of the tokens the load issues: the ones left unrevoked expire and housekeeping removes them. */
  tokenSeconds: number;
}

function parseOptions(argv: string[]): Options {
  const number = (flag: string, fallback: number) => {
    const index = argv.indexOf(flag);
    if (index < 0) return fallback;
    const value = Number(argv[index + 1]);
    if (!Number.isFinite(value) || value <= 0) throw new Error(`${flag} needs a positive number`);
    return value;
  };
  return {
    minutes: number('--minutes', 10),
    connections: number('--connections', 20),
    postgres: argv.includes('--postgres'),
    sampleSeconds: 10,
    tokenSeconds: 60,
  };
}

const log = (line: string) => process.stderr.write(`${line}\n`);

/** Where the server keeps its data, and how to read its size and row counts from outside. */
interface SoakStore {
  databaseUrl: string;
  stats(): Promise<SoakSample['store']>;
  close(): Promise<void>;
}

function sqliteStore(dir: string): SoakStore {
  const path = join(dir, 'tessera.db');
  let db: Database.Database | undefined;
  return {
    databaseUrl: `sqlite:${path}`,
    async stats() {
      db ??= new Database(path, { readonly: true });
      const bytes = [path, `${path}-wal`].filter(existsSync).reduce((sum, file) => sum + statSync(file).size, 0);
      const count = (table: string) => (db!.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n;
      return { bytes, tokens: count('tokens'), events: count('events') };
    },
    async close() {
      db?.close();
    },
  };
}

async function postgresStore(): Promise<SoakStore> {
  const adminUrl = process.env.SOAK_POSTGRES_URL ?? process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
  const name = `tessera_soak_${process.pid}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  let client: pg.Client | undefined;
  return {
    databaseUrl: url.toString(),
    async stats() {
      if (client === undefined) {
        client = new pg.Client({ connectionString: url.toString() });
        await client.connect();
      }
      const row = (
        await client.query<{ bytes: string; tokens: string; events: string }>(
          'SELECT pg_database_size(current_database()) AS bytes, (SELECT count(*) FROM tokens) AS tokens, (SELECT count(*) FROM events) AS events',
        )
      ).rows[0]!;
      return { bytes: Number(row.bytes), tokens: Number(row.tokens), events: Number(row.events) };
    },
    async close() {
      await client?.end();
      const cleanup = new pg.Client({ connectionString: adminUrl });
      await cleanup.connect();
      await cleanup.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await cleanup.end();
    },
  };
}

interface AppAccessKeys {
  appId: string;
  appKey: string;
  clientId: string;
  clientSecret: string;
}

function createApp(databaseUrl: string): AppAccessKeys {
  const result = spawnSync(process.execPath, [MAIN, 'apps', 'create', '--name', 'Soak', '--json'], {
    env: { ...process.env, DATABASE_URL: databaseUrl },
    encoding: 'utf8',
  });
  if (result.status !== 0) throw new Error(`apps create failed: ${result.stderr}`);
  return JSON.parse(result.stdout) as AppAccessKeys;
}

/** wrk with bench/wrk/soak.lua on the load core for the whole run; resolves with its totals. */
function runLoad(url: string, app: AppAccessKeys, options: Options): Promise<LoadTotals> {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    SOAK_APP_ID: app.appId,
    SOAK_APP_KEY: app.appKey,
    SOAK_CLIENT_ID: app.clientId,
    SOAK_CLIENT_SECRET: app.clientSecret,
    SOAK_BASIC: `Basic ${Buffer.from(`${app.appId}:soak`).toString('base64')}`,
    SOAK_TOKEN_SECONDS: String(options.tokenSeconds),
  };
  const seconds = Math.round(options.minutes * 60);
  return runWrk(WRK_SCRIPT, url, options.connections, seconds, env, 'SOAK_RESULT ').then((line) => JSON.parse(line) as LoadTotals);
}

/** Writes the results, and for the documented soak docs/soak.svg and docs/soak.md. */
function report(run: SoakRun, dir: string, write: { results: boolean }): void {
  const verdict = verdictOf(run);
  const name = `soak-${run.startedAt.replace(/[:.]/g, '-')}`;
  if (write.results) {
    const resultsDir = join(ROOT, 'bench', 'results');
    mkdirSync(resultsDir, { recursive: true });
    const resultFile = join(resultsDir, `${name}.json`);
    writeFileSync(resultFile, `${JSON.stringify({ ...run, verdict }, null, 2)}\n`);
    log(`soak: results in ${resultFile}`);
  }
  log(`soak: ${verdict.verdict}`);
  log(`soak: ${run.load.requests} requests (${verdict.throughput.overallPerSecond}/s), ${verdict.failures} failed`);
  if (run.options.minutes >= DOCUMENTED_MINUTES) {
    writeFileSync(join(ROOT, 'docs', 'soak.svg'), `${soakChart(run, verdict)}\n`);
    writeSoakDoc(join(ROOT, 'docs', 'soak.md'), soakFigures(run, verdict));
    log('soak: updated docs/soak.md and docs/soak.svg');
  } else {
    const chartFile = join(dir, `${name}.svg`);
    writeFileSync(chartFile, `${soakChart(run, verdict)}\n`);
    log(`soak: shorter than ${DOCUMENTED_MINUTES} minutes, docs left as they are; chart in ${chartFile}`);
  }
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  // `--report FILE`: the verdict, chart and figures again from a saved run, without running.
  const saved = argv.indexOf('--report');
  if (saved >= 0) {
    const file = argv[saved + 1];
    if (file === undefined) throw new Error('--report needs a bench/results/soak-*.json file');
    report(JSON.parse(readFileSync(file, 'utf8')) as SoakRun, tmpdir(), { results: true });
    return;
  }
  const options = parseOptions(argv);
  requireTools('the soak');
  // This script samples now and then; keep it off the server's core too.
  spawnSync('taskset', ['-pc', String(LOAD_CORE), String(process.pid)], { stdio: 'ignore' });
  const dir = mkdtempSync(join(tmpdir(), 'tessera-soak-'));
  const store = options.postgres ? await postgresStore() : sqliteStore(dir);
  const probeFile = join(dir, 'probe.jsonl');
  let server: RunningServer | undefined;
  try {
    const app = createApp(store.databaseUrl);
    const cpuBefore = await cpuAvailability();
    server = await startPinnedServer(
      'tessera',
      MAIN,
      ['serve'],
      {
        ...MEASURED_SERVER_ENV,
        DATABASE_URL: store.databaseUrl,
        LOG_REQUESTS: 'off',
        REDIS_URL: '',
        TRUSTED_PROXIES: '',
        SOAK_PROBE_FILE: probeFile,
        SOAK_PROBE_INTERVAL_MS: String(options.sampleSeconds * 1000),
      },
      ['--import', pathToFileURL(PROBE).href],
    );
    const pid = server.child.pid!;
    log(
      `soak: tessera (pid ${pid}) on ${options.postgres ? 'PostgreSQL' : 'SQLite'} at ${server.url}; ${options.minutes} min, ${options.connections} connections`,
    );

    const samples: SoakSample[] = [];
    const loadStartedAt = performance.now();
    const loadStartedAtUnix = Date.now();
    const sample = async () => {
      const t = (performance.now() - loadStartedAt) / 1000;
      const memory = memoryOf(pid);
      const entry: SoakSample = {
        t: Number(t.toFixed(1)),
        rssMb: Number(memory.rssMb.toFixed(1)),
        peakRssMb: Number(memory.peakRssMb.toFixed(1)),
        store: await store.stats(),
      };
      samples.push(entry);
      log(
        `  ${(t / 60).toFixed(1).padStart(5)} min  RSS ${entry.rssMb.toFixed(1)} MB  tokens ${entry.store.tokens}  events ${entry.store.events}  store ${(entry.store.bytes / 1048576).toFixed(1)} MB`,
      );
    };
    const load = runLoad(server.url, app, options);
    await sample();
    const sampler = setInterval(
      () => void sample().catch((error) => log(`sample failed: ${(error as Error).message}`)),
      options.sampleSeconds * 1000,
    );
    let totals: LoadTotals;
    try {
      totals = await load;
    } finally {
      clearInterval(sampler);
    }
    await sample();
    await sleep(options.sampleSeconds * 1000 + 500); // the probe's line for the last interval
    await server.stop();
    const serverExit = { code: server.child.exitCode, signal: server.child.signalCode };
    const cpuAfter = await cpuAvailability();

    const probe = readFileSync(probeFile, 'utf8')
      .split('\n')
      .filter((line) => line.trim() !== '')
      .map((line) => JSON.parse(line) as ProbeLine)
      .map((line) => ({ ...line, t: Number(((line.at - loadStartedAtUnix) / 1000).toFixed(1)) }));
    const cpuinfo = readFileSync('/proc/cpuinfo', 'utf8');
    const run: SoakRun = {
      startedAt: new Date(loadStartedAtUnix).toISOString(),
      backend: options.postgres ? 'postgres' : 'sqlite',
      options: {
        minutes: options.minutes,
        connections: options.connections,
        sampleSeconds: options.sampleSeconds,
        tokenSeconds: options.tokenSeconds,
      },
      machine: {
        node: process.version,
        cpu: /model name\s*:\s*(.*)/.exec(cpuinfo)?.[1] ?? 'unknown',
        cores: (cpuinfo.match(/^processor/gm) ?? []).length,
        wrk: spawnSync('wrk', ['--version'], { encoding: 'utf8' }).stdout.split('\n')[0] ?? 'unknown',
      },
      cpuShare: { before: Number(cpuBefore.toFixed(3)), after: Number(cpuAfter.toFixed(3)) },
      load: totals,
      samples,
      probe,
      serverExit,
    };
    report(run, tmpdir(), { results: true });
    if (serverExit.code !== 0) throw new Error(`the server exited with ${serverExit.code ?? serverExit.signal} on SIGTERM`);
  } finally {
    await server?.stop();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  log(`soak failed: ${(error as Error).stack ?? String(error)}`);
  process.exitCode = 1;
});
