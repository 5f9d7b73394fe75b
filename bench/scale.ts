/**
 * `npm run bench:scale`: what a check costs as the number of apps and of admin tokens grows, and what
 * made-up AppIDs and tokens cost, on SQLite and PostgreSQL; and the rate of `tessera apps import`.
 * Each size is its own fresh store, filled before its server starts (bench/scale-seed.ts). The
 * server is pinned to one core and wrk to the other; requests are spread uniformly over the size's
 * credentials (bench/wrk/scale.lua). Per run: the server's CPU time per request (/proc/PID/stat),
 * PostgreSQL's too (its backends for the store's database), requests/s, p99, the server's RSS, and
 * the cache misses per request from its Prometheus metrics (`tessera_cache_lookups_total`).
 *
 * Options (defaults in brackets; a full run, all defaults, takes about 10–15 minutes):
 *   --stores sqlite,postgres   [both; PostgreSQL from BENCH_POSTGRES_URL or postgres@127.0.0.1:5432]
 *   --cases anonymous,admin,unknown-app,unknown-token,issue [all], or none (with --rss-minutes)
 *   --issue-apps 10,10000  apps for the admin-token issue case (each request a random app's ClientID and ClientSecret)
 *   --apps 10,1000,10000,100000   apps of whoami with an anonymous token (one token per app)
 *   --tokens 1000,100000,1000000  admin tokens of whoami with an admin token (over ≤ 1000 apps)
 *   --seconds 5  --repetitions 2  --connections 50
 *   --warmup-max 180    seconds at most of the warm-up's pass over every credential of a size
 *   --unknown-pool 10000  made-up AppIDs / tokens, each request one of them at random
 *   --import-apps 20000   apps in the import file (0: no import)
 *   --cache-mb N        CACHE_MEMORY_MB for the servers (unset: the server's default)
 *   --rss-minutes [N]   also one long run (10 min) on the largest sizes, RSS sampled every 10 s
 *   --smoke             tiny sizes, one second, one repetition: proves the benchmark runs
 * Only a full run (every case, both stores, the default sizes) rewrites the Scale section of
 * docs/benchmarks.md; every run writes bench/results/scale-<time>.json.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  cpuAvailability,
  LOAD_CORE,
  memoryOf,
  MEASURED_SERVER_ENV,
  requireTools,
  SERVER_CORE,
  sleep,
  startPinnedServer,
  type RunningServer,
} from './processes.js';
import {
  postgresFactory,
  seedStore,
  sqliteFactory,
  writeUnknownAppIds,
  writeUnknownTokens,
  type Backend,
  type SeededStore,
  type SeedSpec,
  type StoreFactory,
} from './scale-seed.js';
import {
  flatness,
  printReport,
  summarize,
  writeScaleDocs,
  type CaseName,
  type ImportResult,
  type RssResult,
  type ScaleResults,
  type ScaleRun,
} from './scale-report.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const DIST = fileURLToPath(new URL('../', import.meta.url));
const MAIN = join(DIST, 'src', 'cli', 'main.js');
const WRK_SCRIPT = join(ROOT, 'bench', 'wrk', 'scale.lua');
/** Admin tokens are spread over this many apps at most, so that the app cache holds every app. */
const ADMIN_APPS = 1_000;
/** Clock ticks per second of /proc/PID/stat's times: 100 on every Linux this runs on. */
const TICKS_PER_SECOND = 100;
const CASES = ['anonymous', 'admin', 'unknown-app', 'unknown-token', 'issue'] as const;
type CaseFamily = (typeof CASES)[number];

interface Options {
  stores: Backend[];
  cases: CaseFamily[];
  apps: number[];
  tokens: number[];
  issueApps: number[];
  seconds: number;
  repetitions: number;
  connections: number;
  warmupMaxSeconds: number;
  unknownPool: number;
  importApps: number;
  cacheMb: number | undefined;
  rssMinutes: number | undefined;
  smoke: boolean;
}

const DEFAULTS = {
  apps: [10, 1_000, 10_000, 100_000],
  tokens: [1_000, 100_000, 1_000_000],
  issueApps: [10, 10_000],
  seconds: 5,
  repetitions: 2,
};

function parseOptions(argv: string[]): Options {
  const known = new Set([
    '--stores',
    '--cases',
    '--apps',
    '--tokens',
    '--issue-apps',
    '--seconds',
    '--repetitions',
    '--connections',
    '--warmup-max',
    '--unknown-pool',
    '--import-apps',
    '--cache-mb',
    '--rss-minutes',
    '--smoke',
  ]);
  for (const arg of argv) if (arg.startsWith('--') && !known.has(arg)) throw new Error(`unknown option ${arg}; see bench/scale.ts`);
  const value = (flag: string) => {
    const index = argv.indexOf(flag);
    const next = index >= 0 ? argv[index + 1] : undefined;
    return next === undefined || next.startsWith('--') ? undefined : next;
  };
  const number = (flag: string, fallback: number, min = 1) => {
    const raw = value(flag);
    if (raw === undefined) {
      if (argv.includes(flag)) throw new Error(`${flag} needs a number`);
      return fallback;
    }
    const parsed = Number(raw.replace(/_/g, ''));
    if (!Number.isFinite(parsed) || parsed < min) throw new Error(`${flag} must be a number ≥ ${min}; got ${raw}`);
    return parsed;
  };
  const sizes = (flag: string, fallback: number[]) => {
    const raw = value(flag);
    if (raw === undefined) return fallback;
    const parsed = raw.split(',').map((item) => Number(item.replace(/_/g, '')));
    if (parsed.some((size) => !Number.isSafeInteger(size) || size < 1)) throw new Error(`${flag} takes whole numbers ≥ 1, comma-separated`);
    return [...new Set(parsed)].sort((a, b) => a - b);
  };
  const smoke = argv.includes('--smoke');
  const stores = (value('--stores') ?? 'sqlite,postgres').split(',');
  for (const store of stores) if (store !== 'sqlite' && store !== 'postgres') throw new Error('--stores takes sqlite, postgres');
  const casesRaw = value('--cases') ?? CASES.join(',');
  const cases = casesRaw === 'none' ? [] : casesRaw.split(',');
  for (const name of cases) if (!(CASES as readonly string[]).includes(name)) throw new Error(`--cases takes ${CASES.join(', ')} or none`);
  const rssMinutes = argv.includes('--rss-minutes') ? number('--rss-minutes', 10, 0.1) : undefined;
  return {
    stores: [...new Set(stores)] as Backend[],
    cases: cases as CaseFamily[],
    apps: sizes('--apps', smoke ? [10, 200] : DEFAULTS.apps),
    tokens: sizes('--tokens', smoke ? [100, 2_000] : DEFAULTS.tokens),
    issueApps: sizes('--issue-apps', smoke ? [10, 200] : DEFAULTS.issueApps),
    seconds: number('--seconds', smoke ? 1 : DEFAULTS.seconds),
    repetitions: number('--repetitions', smoke ? 1 : DEFAULTS.repetitions),
    connections: number('--connections', 50),
    warmupMaxSeconds: number('--warmup-max', smoke ? 5 : 180),
    unknownPool: number('--unknown-pool', smoke ? 200 : 10_000),
    importApps: number('--import-apps', smoke ? 300 : 20_000, 0),
    cacheMb: argv.includes('--cache-mb') ? number('--cache-mb', 0) : undefined,
    rssMinutes,
    smoke,
  };
}

/** A full run: what docs/benchmarks.md reports. */
function isFullRun(options: Options, measuredStores: Backend[]): boolean {
  const same = (a: number[], b: number[]) => a.length === b.length && a.every((value, index) => value === b[index]);
  return (
    !options.smoke &&
    options.cases.length === CASES.length &&
    measuredStores.length === 2 &&
    same(options.apps, DEFAULTS.apps) &&
    same(options.tokens, DEFAULTS.tokens) &&
    same(options.issueApps, DEFAULTS.issueApps) &&
    options.seconds >= DEFAULTS.seconds &&
    options.repetitions >= DEFAULTS.repetitions
  );
}

const log = (line: string) => process.stderr.write(`${line}\n`);

/** user + system ticks of a process, or undefined when it is gone (or not readable). */
function cpuTicks(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The fields after the command name (which may hold spaces), from the third on: utime is the 14th.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return undefined;
  }
}

/** A `tessera serve` on a seeded store, with its metrics listener. */
interface ScaleServer {
  label: string;
  seeded: SeededStore;
  server: RunningServer;
  pid: number;
  metricsUrl: string;
  factory: StoreFactory;
  rssStartMb: number;
}

async function startServer(label: string, seeded: SeededStore, factory: StoreFactory, options: Options): Promise<ScaleServer> {
  stopIfInterrupted();
  const server = await startPinnedServer(label, MAIN, ['serve'], {
    ...MEASURED_SERVER_ENV,
    DATABASE_URL: seeded.target.databaseUrl,
    LOG_REQUESTS: 'off',
    REDIS_URL: '',
    METRICS_PORT: '0',
    ...(options.cacheMb === undefined ? {} : { CACHE_MEMORY_MB: String(options.cacheMb) }),
  });
  const deadline = Date.now() + 10_000;
  let metricsUrl: string | undefined;
  while ((metricsUrl = /"metrics on (http:\/\/[^"\s]+)"/.exec(server.output())?.[1]) === undefined) {
    if (Date.now() > deadline) {
      await server.stop();
      throw new Error(`${label}: no "metrics on" line in the server's log`);
    }
    await sleep(25);
  }
  const pid = server.child.pid!;
  return { label, seeded, server, pid, metricsUrl, factory, rssStartMb: memoryOf(pid).rssMb };
}

/**
 * The caches' metrics now: lookups so far by `cache/result` (`apps/miss`), and every other
 * `tessera_cache_*` series as it is (entries or bytes, if the build has them), by its full name.
 */
async function cacheMetrics(metricsUrl: string): Promise<{ lookups: Record<string, number>; others: Record<string, number> }> {
  const text = await (await fetch(metricsUrl)).text();
  const lookups: Record<string, number> = {};
  const others: Record<string, number> = {};
  for (const match of text.matchAll(/^(tessera_cache_\w+)(?:\{([^}]*)\})?\s+(\S+)$/gm)) {
    const [, name, labelText = '', value] = match;
    if (name === 'tessera_cache_lookups_total') {
      const labels = new Map([...labelText.matchAll(/(\w+)="([^"]*)"/g)].map((label) => [label[1], label[2]]));
      lookups[`${labels.get('cache')}/${labels.get('result')}`] = Number(value);
    } else {
      others[labelText === '' ? name! : `${name}{${labelText}}`] = Number(value);
    }
  }
  return { lookups, others };
}

interface LoadSpec {
  file: string;
  order: 'random' | 'sequential';
  expect: number;
}

interface LoadResult {
  requests: number;
  durationUs: number;
  errors: { connect: number; read: number; write: number; timeout: number };
  unexpected: number;
  latencyUs: { p50: number; p90: number; p99: number; mean: number; max: number };
  requestsPerSecond: number;
}

/** The wrk processes running now, stopped if the benchmark is interrupted. */
const running = new Set<ChildProcess>();
/** Set on SIGINT or SIGTERM: nothing new is started. */
let interrupted = false;
const stopIfInterrupted = () => {
  if (interrupted) throw new Error('interrupted');
};

/**
 * wrk with bench/wrk/scale.lua from the load core, one thread, `seconds` long; a sequential pass is
 * stopped (SIGINT, after which wrk reports as usual) as soon as every line has been sent.
 */
function runLoad(spec: LoadSpec, url: string, connections: number, seconds: number): Promise<LoadResult> {
  const args = [
    '-c',
    String(LOAD_CORE),
    'wrk',
    '-t1',
    `-c${connections}`,
    `-d${Math.ceil(seconds)}s`,
    '--timeout',
    '5s',
    '-s',
    WRK_SCRIPT,
    url,
  ];
  const env = { ...process.env, SCALE_CREDENTIALS: spec.file, SCALE_ORDER: spec.order, SCALE_EXPECT: String(spec.expect) };
  stopIfInterrupted();
  return new Promise((resolve, reject) => {
    const child = spawn('taskset', args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    running.add(child);
    let out = '';
    let err = '';
    let passDone = false;
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
      if (!passDone && spec.order === 'sequential' && out.includes('SCALE_PASS_DONE')) {
        passDone = true;
        child.kill('SIGINT');
      }
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
    child.on('error', reject);
    child.on('exit', (code) => {
      running.delete(child);
      const line = out.split('\n').find((candidate) => candidate.startsWith('SCALE_RESULT '));
      if (line === undefined || (code !== 0 && !passDone)) return reject(new Error(`wrk failed (${code}): ${err || out}`));
      const result = JSON.parse(line.slice('SCALE_RESULT '.length)) as Omit<LoadResult, 'requestsPerSecond'>;
      resolve({ ...result, requestsPerSecond: result.requests / (result.durationUs / 1e6) });
    });
  });
}

const failuresOf = (result: LoadResult) =>
  result.unexpected + result.errors.connect + result.errors.read + result.errors.write + result.errors.timeout;

const lineCount = (file: string) => {
  let count = 0;
  const text = readFileSync(file);
  for (let index = text.indexOf(10); index >= 0; index = text.indexOf(10, index + 1)) count++;
  return count;
};

/**
 * Warm-up, discarded: two seconds at random (the JIT, the connections), then one pass over every
 * credential in order, so that a cache that can hold them all is full before the measurement
 * (uniform random picks would take about ln N times as many requests to touch each once).
 */
async function warmUp(server: ScaleServer, spec: LoadSpec, options: Options): Promise<void> {
  const url = server.server.url;
  await runLoad({ ...spec, order: 'random' }, url, options.connections, options.smoke ? 1 : 2);
  const lines = lineCount(spec.file);
  const started = performance.now();
  const pass = await runLoad({ ...spec, order: 'sequential' }, url, options.connections, options.warmupMaxSeconds);
  const seconds = (performance.now() - started) / 1000;
  const complete = pass.requests >= lines;
  log(
    `  warm-up ${server.label}: ${complete ? `all ${lines}` : `only ${pass.requests} of ${lines}`} credentials in ${seconds.toFixed(1)} s` +
      (complete ? '' : ` (--warmup-max ${options.warmupMaxSeconds})`) +
      (failuresOf(pass) > 0 ? `, ${failuresOf(pass)} FAILED` : ''),
  );
}

/** One measured run: CPU, PostgreSQL's CPU, RSS and cache lookups read before and after. */
async function measureRun(
  server: ScaleServer,
  spec: LoadSpec,
  what: Pick<ScaleRun, 'store' | 'case' | 'size' | 'storeSize' | 'repetition' | 'cpuShare'>,
  options: Options,
): Promise<ScaleRun> {
  const lookupsBefore = (await cacheMetrics(server.metricsUrl)).lookups;
  const pgPids = await server.factory.serverPids(server.seeded.target);
  const pgBefore = new Map(pgPids.map((pid) => [pid, cpuTicks(pid)]));
  const rssBefore = memoryOf(server.pid).rssMb;
  const ticksBefore = cpuTicks(server.pid)!;
  const result = await runLoad(spec, server.server.url, options.connections, options.seconds);
  const ticks = cpuTicks(server.pid)! - ticksBefore;
  let pgTicks = 0;
  // Backends that began during the run count whole; one that ended during it is lost (rare: the pool keeps them).
  for (const pid of await server.factory.serverPids(server.seeded.target)) {
    const now = cpuTicks(pid);
    if (now !== undefined) pgTicks += now - (pgBefore.get(pid) ?? 0);
  }
  const memory = memoryOf(server.pid);
  const { lookups: lookupsAfter, others: cacheMetricsAfter } = await cacheMetrics(server.metricsUrl);
  const perRequest = (value: number) => value / Math.max(1, result.requests);
  const lookups: Record<string, number> = {};
  for (const key of new Set([...Object.keys(lookupsBefore), ...Object.keys(lookupsAfter)])) {
    const delta = (lookupsAfter[key] ?? 0) - (lookupsBefore[key] ?? 0);
    if (delta > 0) lookups[key] = perRequest(delta);
  }
  const usPerTick = 1e6 / TICKS_PER_SECOND;
  const run: ScaleRun = {
    ...what,
    requests: result.requests,
    requestsPerSecond: result.requestsPerSecond,
    latencyUs: result.latencyUs,
    failures: failuresOf(result),
    cpuUsPerRequest: perRequest(ticks * usPerTick),
    postgresCpuUsPerRequest: server.seeded.target.backend === 'postgres' ? perRequest(pgTicks * usPerTick) : null,
    serverStartRssMb: server.rssStartMb,
    rssBeforeMb: rssBefore,
    rssAfterMb: memory.rssMb,
    peakRssMb: memory.peakRssMb,
    lookupsPerRequest: lookups,
    cacheMetricsAfter,
  };
  const misses = [...new Set(Object.keys(lookups).map((key) => key.split('/')[0]!))]
    .sort()
    .map((cache) => `${cache} ${(lookups[`${cache}/miss`] ?? 0).toFixed(2)}`)
    .join(', ');
  log(
    `  ${what.store.padEnd(8)} ${what.case.padEnd(16)} ${String(what.size).padStart(8)}  #${what.repetition}  ` +
      `${run.cpuUsPerRequest.toFixed(1)} µs` +
      (run.postgresCpuUsPerRequest === null ? '' : ` + ${run.postgresCpuUsPerRequest.toFixed(1)} µs PostgreSQL`) +
      `  ${Math.round(run.requestsPerSecond)} req/s  p99 ${(run.latencyUs.p99 / 1000).toFixed(1)} ms  RSS ${rssBefore.toFixed(0)} → ${memory.rssMb.toFixed(0)} MB` +
      `  misses/req: ${misses || 'none'}` +
      (run.failures > 0 ? `  FAILED REQUESTS: ${run.failures}` : ''),
  );
  return run;
}

/** What one group of servers measures: a known case over several sizes, and made-up credentials on the largest. */
interface Group {
  /** `whoami-anonymous`, `whoami-admin` or `issue-admin`, or undefined when only the strangers' case runs. */
  known: CaseName | undefined;
  sizes: number[];
  seedSpec(size: number): SeedSpec;
  fileOf(seeded: SeededStore): string;
  stranger: { case: CaseName; expect: number; write(file: string, seeded: SeededStore): void } | undefined;
}

function groupsOf(options: Options): Group[] {
  const groups: Group[] = [];
  const has = (family: CaseFamily) => options.cases.includes(family);
  if (has('anonymous') || has('unknown-app')) {
    groups.push({
      known: has('anonymous') ? 'whoami-anonymous' : undefined,
      sizes: has('anonymous') ? options.apps : [Math.max(...options.apps)],
      seedSpec: (size) => ({ apps: size, anonymousTokens: true, adminTokens: 0, adminApps: 0 }),
      fileOf: (seeded) => seeded.anonymousFile!,
      stranger: has('unknown-app')
        ? { case: 'unknown-appid', expect: 404, write: (file) => writeUnknownAppIds(file, options.unknownPool) }
        : undefined,
    });
  }
  if (has('admin') || has('unknown-token')) {
    groups.push({
      known: has('admin') ? 'whoami-admin' : undefined,
      sizes: has('admin') ? options.tokens : [Math.max(...options.tokens)],
      seedSpec: (size) => ({ apps: Math.min(size, ADMIN_APPS), anonymousTokens: false, adminTokens: size, adminApps: ADMIN_APPS }),
      fileOf: (seeded) => seeded.adminFile!,
      stranger: has('unknown-token')
        ? {
            case: 'unknown-token',
            expect: 401,
            write: (file, seeded) => writeUnknownTokens(file, options.unknownPool, seeded.someAppId),
          }
        : undefined,
    });
  }
  if (has('issue')) {
    groups.push({
      known: 'issue-admin',
      sizes: options.issueApps,
      seedSpec: (size) => ({ apps: size, anonymousTokens: false, adminTokens: 0, adminApps: 0, tokenRequests: true }),
      fileOf: (seeded) => seeded.issueFile!,
      stranger: undefined,
    });
  }
  return groups;
}

/** Servers started and not yet stopped, and stores not yet dropped: cleaned up on the way out, even on Ctrl-C. */
const servers = new Set<ScaleServer>();

async function stopServer(server: ScaleServer): Promise<void> {
  servers.delete(server);
  await server.server.stop();
  await server.seeded.target.drop().catch((error: unknown) => log(`could not drop ${server.label}'s store: ${(error as Error).message}`));
}

/** One group on one store: every size's server up at once, warm-ups, then the repetitions alternating the sizes. */
async function measureGroup(group: Group, factory: StoreFactory, work: string, options: Options): Promise<ScaleRun[]> {
  const backend = factory.backend;
  const started: ScaleServer[] = [];
  const runs: ScaleRun[] = [];
  const kind = group.known ?? group.stranger!.case;
  try {
    for (const size of group.sizes) {
      const label = `${backend}-${kind}-${size}`;
      const target = await factory.create(label);
      let seeded: SeededStore;
      try {
        seeded = await seedStore(target, group.seedSpec(size), work, label);
      } catch (error) {
        await target.drop().catch(() => {});
        throw error;
      }
      const spec = group.seedSpec(size);
      log(
        `seeded ${label}: ${spec.apps} apps${spec.adminTokens > 0 ? `, ${spec.adminTokens} admin tokens` : ''} in ${seeded.seedSeconds.toFixed(1)} s`,
      );
      const server = await startServer(label, seeded, factory, options).catch(async (error: unknown) => {
        await target.drop().catch(() => {});
        throw error;
      });
      servers.add(server);
      started.push(server);
    }
    const largest = started.at(-1)!;
    if (group.known !== undefined) {
      for (const server of started) await warmUp(server, { file: group.fileOf(server.seeded), order: 'random', expect: 200 }, options);
      for (let repetition = 1; repetition <= options.repetitions; repetition++) {
        const cpuShare = await cpuAvailability();
        log(`[${backend} ${group.known}] repetition ${repetition}/${options.repetitions}: CPU available ${(cpuShare * 100).toFixed(1)} %`);
        for (const [index, server] of started.entries()) {
          const spec: LoadSpec = { file: group.fileOf(server.seeded), order: 'random', expect: 200 };
          const size = group.sizes[index]!;
          runs.push(
            await measureRun(server, spec, { store: backend, case: group.known, size, storeSize: size, repetition, cpuShare }, options),
          );
        }
      }
    }
    if (group.stranger !== undefined) {
      const file = join(work, `${largest.label}-${group.stranger.case}.txt`);
      group.stranger.write(file, largest.seeded);
      const spec: LoadSpec = { file, order: 'random', expect: group.stranger.expect };
      await runLoad(spec, largest.server.url, options.connections, options.smoke ? 1 : 2);
      for (let repetition = 1; repetition <= options.repetitions; repetition++) {
        const cpuShare = await cpuAvailability();
        const what = {
          store: backend,
          case: group.stranger.case,
          size: options.unknownPool,
          storeSize: group.sizes.at(-1)!,
          repetition,
          cpuShare,
        };
        runs.push(await measureRun(largest, spec, what, options));
      }
    }
  } finally {
    for (const server of started) await stopServer(server);
  }
  return runs;
}

/** `tessera apps import FILE --json` into a fresh store of each backend, if the build has the command. */
async function measureImport(factories: StoreFactory[], work: string, options: Options): Promise<ImportResult[] | string> {
  const help = spawnSync(process.execPath, [MAIN, '--help'], { encoding: 'utf8' });
  if (!`${help.stdout}${help.stderr}`.includes('apps import'))
    return 'this build has no `tessera apps import`: the import rate is not measured';
  const file = join(work, 'import.jsonl');
  const appIds = new Set<string>();
  const lines: string[] = [];
  const hex = (bytes: number) => randomBytes(bytes).toString('hex');
  // The established service's key format (AppID: 8 hex characters), which is what an import brings.
  while (lines.length < options.importApps) {
    const appId = hex(4);
    if (appIds.has(appId)) continue;
    appIds.add(appId);
    lines.push(JSON.stringify({ name: `Imported ${lines.length}`, appId, appKey: hex(16), clientId: hex(16), clientSecret: hex(32) }));
  }
  writeFileSync(file, `${lines.join('\n')}\n`);
  const results: ImportResult[] = [];
  for (const factory of factories) {
    const target = await factory.create('import');
    try {
      // The same command's start-up on the same (empty) store, which this also migrates: what the import's time includes besides.
      const listStarted = performance.now();
      spawnSync('taskset', ['-c', String(SERVER_CORE), process.execPath, MAIN, 'apps', 'list', '--json'], {
        env: { ...process.env, DATABASE_URL: target.databaseUrl },
        stdio: 'ignore',
      });
      const startupSeconds = (performance.now() - listStarted) / 1000;
      const started = performance.now();
      const result = spawnSync('taskset', ['-c', String(SERVER_CORE), process.execPath, MAIN, 'apps', 'import', file, '--json'], {
        env: { ...process.env, DATABASE_URL: target.databaseUrl },
        encoding: 'utf8',
        maxBuffer: 64 * 1024 * 1024,
      });
      const seconds = (performance.now() - started) / 1000;
      if (result.status !== 0) {
        results.push({
          store: factory.backend,
          apps: options.importApps,
          seconds,
          startupSeconds,
          appsPerSecond: 0,
          failed: result.stderr.slice(0, 500),
        });
        log(`import into ${factory.backend} FAILED: ${result.stderr.slice(0, 500)}`);
        continue;
      }
      let summary: unknown;
      try {
        summary = JSON.parse(result.stdout);
      } catch {
        summary = result.stdout.slice(0, 500);
      }
      const entry: ImportResult = {
        store: factory.backend,
        apps: options.importApps,
        seconds,
        startupSeconds,
        appsPerSecond: options.importApps / seconds,
        summary,
      };
      results.push(entry);
      log(
        `import into ${factory.backend}: ${options.importApps} apps in ${seconds.toFixed(2)} s (${Math.round(entry.appsPerSecond)}/s; the command's start-up alone: ${startupSeconds.toFixed(2)} s)`,
      );
    } finally {
      await target.drop().catch(() => {});
    }
  }
  return results;
}

/** One long run on the largest sizes (anonymous and admin checks mixed), sampling the server's RSS every 10 s. */
async function measureRss(factory: StoreFactory, work: string, options: Options, minutes: number): Promise<RssResult> {
  const label = `${factory.backend}-rss`;
  const spec = {
    apps: Math.max(...options.apps),
    anonymousTokens: true,
    adminTokens: Math.max(...options.tokens),
    adminApps: ADMIN_APPS,
  };
  const target = await factory.create(label);
  const seeded = await seedStore(target, spec, work, label).catch(async (error: unknown) => {
    await target.drop().catch(() => {});
    throw error;
  });
  log(`seeded ${label}: ${spec.apps} apps, ${spec.adminTokens} admin tokens in ${seeded.seedSeconds.toFixed(1)} s`);
  const file = join(work, `${label}-mixed.txt`);
  writeFileSync(file, readFileSync(seeded.anonymousFile!, 'utf8') + readFileSync(seeded.adminFile!, 'utf8'));
  const server = await startServer(label, seeded, factory, options).catch(async (error: unknown) => {
    await target.drop().catch(() => {});
    throw error;
  });
  servers.add(server);
  try {
    const load: LoadSpec = { file, order: 'random', expect: 200 };
    await warmUp(server, load, options);
    const lookupsBefore = (await cacheMetrics(server.metricsUrl)).lookups;
    const samples: { t: number; rssMb: number }[] = [];
    const started = performance.now();
    const sample = () => {
      const t = (performance.now() - started) / 1000;
      const rssMb = memoryOf(server.pid).rssMb;
      samples.push({ t: Math.round(t), rssMb: Math.round(rssMb * 10) / 10 });
      log(`  ${(t / 60).toFixed(1).padStart(5)} min  RSS ${rssMb.toFixed(1)} MB`);
    };
    sample();
    const timer = setInterval(sample, 10_000);
    let result: LoadResult;
    try {
      result = await runLoad(load, server.server.url, options.connections, minutes * 60);
    } finally {
      clearInterval(timer);
    }
    sample();
    const lookupsAfter = (await cacheMetrics(server.metricsUrl)).lookups;
    const missesPerRequest =
      Object.keys(lookupsAfter)
        .filter((key) => key.endsWith('/miss'))
        .reduce((sum, key) => sum + lookupsAfter[key]! - (lookupsBefore[key] ?? 0), 0) / Math.max(1, result.requests);
    return {
      store: factory.backend,
      minutes,
      apps: spec.apps,
      adminTokens: spec.adminTokens,
      requests: result.requests,
      requestsPerSecond: result.requestsPerSecond,
      failures: failuresOf(result),
      missesPerRequest,
      samples,
      peakRssMb: memoryOf(server.pid).peakRssMb,
      ...flatness(samples),
    };
  } finally {
    await stopServer(server);
  }
}

function machineDescription(postgresVersion: string | undefined) {
  const cpuinfo = readFileSync('/proc/cpuinfo', 'utf8');
  return {
    node: process.version,
    cpu: /model name\s*:\s*(.*)/.exec(cpuinfo)?.[1] ?? 'unknown',
    cores: (cpuinfo.match(/^processor/gm) ?? []).length,
    memoryGb: Math.round(totalmem() / 2 ** 30),
    wrk: spawnSync('wrk', ['--version'], { encoding: 'utf8' }).stdout.split('\n')[0]?.split(' Copyright')[0] ?? 'unknown',
    postgres: postgresVersion ?? null,
  };
}

async function postgresVersion(adminUrl: string): Promise<string | undefined> {
  const pg = (await import('pg')).default;
  const client = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 2_000 });
  try {
    await client.connect();
    return (await client.query<{ server_version: string }>('SHOW server_version')).rows[0]?.server_version;
  } catch {
    return undefined;
  } finally {
    await client.end().catch(() => {});
  }
}

async function main(): Promise<number> {
  const options = parseOptions(process.argv.slice(2));
  requireTools('the benchmark');
  // This script reads /proc and the metrics between runs: keep it off the server's core.
  spawnSync('taskset', ['-pc', String(LOAD_CORE), String(process.pid)], { stdio: 'ignore' });
  const work = mkdtempSync(join(tmpdir(), 'tessera-scale-'));
  const factories: StoreFactory[] = [];
  const adminUrl = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
  const onSignal = () => {
    if (interrupted) return;
    interrupted = true;
    log('\ninterrupted: stopping the servers and dropping the stores');
    for (const child of running) child.kill('SIGINT');
    void (async () => {
      for (const server of [...servers]) await stopServer(server).catch(() => {});
      for (const factory of factories) await factory.close().catch(() => {});
      rmSync(work, { recursive: true, force: true });
      process.exit(130);
    })();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    const skipped: string[] = [];
    for (const backend of options.stores) {
      if (backend === 'sqlite') factories.push(sqliteFactory(work));
      else {
        const factory = await postgresFactory(adminUrl);
        if (typeof factory === 'string') {
          skipped.push(`${factory}: PostgreSQL is not measured`);
          log(skipped.at(-1)!);
        } else factories.push(factory);
      }
    }
    const measuredStores = factories.map((factory) => factory.backend);
    const groups = groupsOf(options);
    const full = isFullRun(options, measuredStores);
    log(
      `Scale benchmark (${options.smoke ? 'smoke' : full ? 'full' : 'partial'}): stores ${measuredStores.join(', ') || 'none'}; ` +
        `cases ${options.cases.join(', ') || 'none'}; apps ${options.apps.join(', ')}; admin tokens ${options.tokens.join(', ')}; ` +
        `${options.repetitions} repetition(s) of ${options.seconds} s at ${options.connections} connections; server on core ${SERVER_CORE}, wrk on core ${LOAD_CORE}` +
        (options.cacheMb === undefined ? '' : `; CACHE_MEMORY_MB=${options.cacheMb}`),
    );
    const startedAt = new Date().toISOString();
    const runs: ScaleRun[] = [];
    for (const factory of factories) {
      for (const group of groups) runs.push(...(await measureGroup(group, factory, work, options)));
    }
    let imports: ImportResult[] | string = 'not asked (--import-apps 0)';
    if (options.importApps > 0 && factories.length > 0) {
      imports = await measureImport(factories, work, options);
      if (typeof imports === 'string') log(imports);
    }
    const rss: RssResult[] = [];
    if (options.rssMinutes !== undefined) {
      for (const factory of factories) rss.push(await measureRss(factory, work, options, options.rssMinutes));
    }
    const results: ScaleResults = {
      startedAt,
      mode: options.smoke ? 'smoke' : full ? 'full' : 'partial',
      options: { ...options },
      machine: machineDescription(measuredStores.includes('postgres') ? await postgresVersion(adminUrl) : undefined),
      skipped,
      runs,
      summaries: summarize(runs),
      imports,
      rss,
    };
    const text = printReport(results);
    process.stdout.write(`\n${text}\n`);
    if (!options.smoke) {
      mkdirSync(join(ROOT, 'bench', 'results'), { recursive: true });
      const file = join(ROOT, 'bench', 'results', `scale-${startedAt.replace(/[:.]/g, '-')}.json`);
      writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
      log(`\nresults: ${file}`);
    }
    if (full || (rss.length > 0 && !options.smoke && rss.every((entry) => entry.minutes >= 10))) {
      writeScaleDocs(join(ROOT, 'docs', 'benchmarks.md'), results, {
        cases: full,
        rss: rss.length > 0 && rss.every((entry) => entry.minutes >= 10),
      });
      log('updated docs/benchmarks.md (Scale)');
    } else if (!options.smoke) {
      log('not a full run: docs/benchmarks.md left as it is');
    }
    const failed = runs.reduce((sum, run) => sum + run.failures, 0) + rss.reduce((sum, entry) => sum + entry.failures, 0);
    if (failed > 0) {
      log(`\nFAILED: ${failed} requests were not answered as expected`);
      return 1;
    }
    return 0;
  } finally {
    for (const server of [...servers]) await stopServer(server).catch(() => {});
    for (const factory of factories) await factory.close().catch(() => {});
    rmSync(work, { recursive: true, force: true });
  }
}

process.exitCode = await main();
