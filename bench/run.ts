/**
 * `npm run bench`: Tessera against a bare node:http ceiling and node-oidc-provider, in one run on
 * this machine. `npm run bench -- --smoke` is the quick version CI runs so that the benchmark never
 * rots (a second per case, no verdict on the targets). See docs/benchmarks.md for the method.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openSqliteStore } from '../src/store/sqlite/store.js';
import { openStore } from '../src/store/open.js';
import type { Store } from '../src/store/store.js';
import pg from 'pg';
import { createTessera } from '../src/tessera.js';
import { generateAccessToken } from 'tessera-tokens/internal/tokens/token.js';
import { ceilingCases, peerCases, tesseraCases, type BenchCase, type TesseraFixture } from './cases.js';
import {
  cpuAvailability,
  failuresOf,
  MEASURED_SERVER_ENV,
  requireTools,
  memoryOf,
  runLoad,
  startPinnedServer,
  type LoadResult,
  type RunningServer,
} from './processes.js';
import { writeReport, type BenchRun, type Measurement, type Phase } from './report.js';
import { OIDC_CLIENT } from './servers/oidc-client.js';

interface Options {
  smoke: boolean;
  seconds: number;
  warmupSeconds: number;
  repetitions: number;
  baseTokens: number;
  scaleTokens: number;
}

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const DIST = fileURLToPath(new URL('../', import.meta.url));

function parseOptions(argv: string[]): Options {
  const smoke = argv.includes('--smoke');
  const number = (flag: string, fallback: number) => {
    const index = argv.indexOf(flag);
    return index >= 0 ? Number(argv[index + 1]) : fallback;
  };
  return {
    smoke,
    seconds: number('--seconds', smoke ? 1 : 5),
    // The smoke run's figures mean nothing: it only proves the benchmark still runs, so no warm-up.
    warmupSeconds: smoke ? 0 : 2,
    repetitions: number('--repetitions', smoke ? 1 : 3),
    baseTokens: 1_000,
    scaleTokens: number('--scale-tokens', 1_000_000),
  };
}

const log = (line: string) => process.stderr.write(`${line}\n`);

async function seedTokens(store: Store, appId: string, count: number): Promise<void> {
  for (let done = 0; done < count;) {
    const chunk = Math.min(20_000, count - done);
    await Promise.all(
      Array.from({ length: chunk }, () => {
        const issuedAt = Date.now();
        const { selector, verifierHash } = generateAccessToken(issuedAt);
        return store.tokens.insert(
          {
            selector,
            verifierHash,
            appId,
            kind: 'admin',
            issuedAt,
            expiresAt: null,
            clientId: null,
            scopes: null,
          },
          0,
        );
      }),
    );
    done += chunk;
  }
}

async function issueToken(url: string, appId: string, clientId: string, clientSecret: string): Promise<string> {
  const response = await fetch(`${url}/api/apps/${appId}/oauth2/token`, {
    method: 'POST',
    headers: { authorization: `Basic ${Buffer.from(`${appId}:bench`).toString('base64')}`, 'content-type': 'application/json' },
    body: JSON.stringify({ grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret }),
  });
  if (response.status !== 200) throw new Error(`token request failed: ${response.status} ${await response.text()}`);
  return ((await response.json()) as { access_token: string }).access_token;
}

async function oidcToken(url: string, clientBasic: string): Promise<string> {
  const response = await fetch(`${url}/token`, {
    method: 'POST',
    headers: { authorization: clientBasic, 'content-type': 'application/x-www-form-urlencoded' },
    body: 'grant_type=client_credentials',
  });
  if (response.status !== 200) throw new Error(`oidc-provider token request failed: ${response.status}`);
  return ((await response.json()) as { access_token: string }).access_token;
}

interface TesseraTarget {
  server: RunningServer;
  fixture: TesseraFixture;
  databaseUrl: string;
  tokensDir: string;
  /** Drops what the target created (a PostgreSQL database). */
  cleanup: () => Promise<void>;
}

/** Starts Tessera on a fresh store (`databaseUrl`) holding `baseTokens` tokens, with one app. */
async function startTessera(
  target: string,
  databaseUrl: string,
  workDir: string,
  baseTokens: number,
  cleanup: () => Promise<void>,
): Promise<TesseraTarget> {
  const store = await openStore(databaseUrl);
  const app = await createTessera({ store }).apps.create('Benchmark app');
  await seedTokens(store, app.appId, baseTokens);
  await store.close();
  const server = await startPinnedServer(target, join(DIST, 'src', 'cli', 'main.js'), ['serve'], {
    ...MEASURED_SERVER_ENV,
    DATABASE_URL: databaseUrl,
  });
  const fixture: TesseraFixture = {
    target,
    url: server.url,
    appId: app.appId,
    appKey: app.appKey,
    clientId: app.clientId,
    clientSecret: app.clientSecret,
    adminToken: await issueToken(server.url, app.appId, app.clientId, app.clientSecret),
    anonymousToken: await issueToken(server.url, app.appId, app.appId, app.appKey),
  };
  const tokensDir = join(workDir, `tokens-${target.replace(/\W+/g, '_')}`);
  mkdirSync(tokensDir);
  return { server, fixture, databaseUrl, tokensDir, cleanup };
}

/** PostgreSQL on a fresh database, when a server is reachable (BENCH_POSTGRES_URL); undefined otherwise. */
async function startTesseraOnPostgres(workDir: string, baseTokens: number): Promise<TesseraTarget | undefined> {
  const adminUrl = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
  const name = `tessera_bench_${process.pid}`;
  const admin = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 2_000 });
  try {
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.query(`CREATE DATABASE ${name}`);
  } catch (error) {
    log(`PostgreSQL not reachable at ${adminUrl} (${(error as Error).message}): tessera/postgres is not measured`);
    await admin.end().catch(() => {});
    return undefined;
  }
  await admin.end();
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const drop = async () => {
    const client = new pg.Client({ connectionString: adminUrl });
    await client.connect();
    await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await client.end();
  };
  return startTessera('tessera/postgres', url.toString(), workDir, baseTokens, drop);
}

/** Warm-up (discarded), then `repetitions` rounds of every case at 1 and at 50 connections. */
async function measure(
  phase: Phase,
  cases: BenchCase[],
  options: Options,
  tokensDirOf: (target: string) => string,
): Promise<Measurement[]> {
  const measurements: Measurement[] = [];
  if (options.warmupSeconds > 0) {
    log(`\n[${phase}] warm-up (${options.warmupSeconds} s a case, discarded)`);
    for (const benchCase of cases) await runLoad(benchCase.load, 50, options.warmupSeconds);
  }
  for (let repetition = 1; repetition <= options.repetitions; repetition++) {
    const cpuShare = await cpuAvailability();
    log(`[${phase}] repetition ${repetition}/${options.repetitions}: CPU available ${(cpuShare * 100).toFixed(1)} % of wall time`);
    for (const benchCase of cases) {
      const results: Record<'1' | '50', LoadResult> = {} as Record<'1' | '50', LoadResult>;
      for (const connections of [1, 50] as const) {
        const tokensFile = benchCase.collectTokens
          ? join(
              tokensDirOf(benchCase.target),
              `${phase.replace(/\W+/g, '_')}-${repetition}-${connections}-${benchCase.name.replace(/\W+/g, '_')}.txt`,
            )
          : undefined;
        results[connections] = await runLoad({ ...benchCase.load, ...(tokensFile ? { tokensFile } : {}) }, connections, options.seconds);
      }
      const failures = failuresOf(results[1]) + failuresOf(results[50]);
      log(
        `  ${benchCase.name.padEnd(44)} 1 conn: p50 ${results[1].latencyUs.p50} us   50 conn: ${Math.round(results[50].requestsPerSecond)} req/s` +
          (failures > 0 ? `   FAILED REQUESTS: ${failures}` : ''),
      );
      measurements.push({
        phase,
        repetition,
        cpuShare,
        case: benchCase.name,
        target: benchCase.target,
        kind: benchCase.kind,
        one: results[1],
        fifty: results[50],
      });
    }
  }
  return measurements;
}

/** Every token answered during the run must still work: checked against the store, and a sample over HTTP. */
async function verifyTokens(target: TesseraTarget) {
  const { readdirSync } = await import('node:fs');
  const tokens = readdirSync(target.tokensDir).flatMap((file) =>
    readFileSync(join(target.tokensDir, file), 'utf8').split('\n').filter(Boolean),
  );
  const store = await openStore(target.databaseUrl, { connectTimeoutMs: 30_000, queryTimeoutMs: 30_000 });
  const tessera = createTessera({ store });
  const app = await tessera.appCache.require(target.fixture.appId);
  let invalid = 0;
  for (const token of tokens) {
    if ((await tessera.checker.principal(app, token)) === undefined) invalid++;
  }
  await store.close();
  let invalidOverHttp = 0;
  const sample = tokens.filter((_, index) => index % Math.max(1, Math.floor(tokens.length / 500)) === 0);
  for (const token of sample) {
    const response = await fetch(`${target.fixture.url}/api/apps/${target.fixture.appId}/whoami`, {
      headers: { authorization: `Bearer ${token}` },
    });
    await response.arrayBuffer();
    if (response.status !== 200) invalidOverHttp++;
  }
  return { checked: tokens.length, invalid, sampledOverHttp: sample.length, invalidOverHttp };
}

async function main(): Promise<number> {
  const options = parseOptions(process.argv.slice(2));
  requireTools('the benchmark');
  const workDir = mkdtempSync(join(tmpdir(), 'tessera-bench-'));
  const servers: RunningServer[] = [];
  const cleanups: (() => Promise<void>)[] = [];
  try {
    log(
      `Tessera benchmark (${options.smoke ? 'smoke' : 'full'}): ${options.repetitions} repetition(s), ${options.seconds} s a run; servers on core 0, wrk on core 1`,
    );
    const ceiling = await startPinnedServer('ceiling', join(DIST, 'bench', 'servers', 'ceiling.js'), [], {});
    servers.push(ceiling);
    const peer = await startPinnedServer('oidc-provider', join(DIST, 'bench', 'servers', 'oidc.js'), [], { NODE_ENV: 'production' });
    servers.push(peer);
    const clientBasic = `Basic ${Buffer.from(`${OIDC_CLIENT.clientId}:${OIDC_CLIENT.clientSecret}`).toString('base64')}`;
    const sqlitePath = join(workDir, 'tessera.db');
    const tessera = await startTessera('tessera/sqlite', `sqlite:${sqlitePath}`, workDir, options.baseTokens, async () => {});
    servers.push(tessera.server);
    const postgres = await startTesseraOnPostgres(workDir, options.baseTokens);
    if (postgres !== undefined) {
      servers.push(postgres.server);
      cleanups.push(postgres.cleanup);
    }
    const targets = [tessera, ...(postgres === undefined ? [] : [postgres])];
    const tokensDirOf = (target: string) => targets.find((t) => t.fixture.target === target)?.tokensDir ?? workDir;

    const referenceCases = ceilingCases(ceiling.url, String(ceiling.announcement.token));
    const cases = [
      ...referenceCases,
      ...peerCases(peer.url, clientBasic, await oidcToken(peer.url, clientBasic)),
      ...targets.flatMap((target) => tesseraCases(target.fixture)),
    ];
    const measurements = await measure(`${options.baseTokens} tokens stored`, cases, options, tokensDirOf);
    // One after the other: checking hundreds of thousands of SQLite tokens keeps this process busy.
    const verifications = [];
    for (const target of targets) verifications.push(await verifyTokens(target));
    const verification = verifications.reduce((sum, v) => ({
      checked: sum.checked + v.checked,
      invalid: sum.invalid + v.invalid,
      sampledOverHttp: sum.sampledOverHttp + v.sampledOverHttp,
      invalidOverHttp: sum.invalidOverHttp + v.invalidOverHttp,
    }));
    log(
      `\nverified ${verification.checked} issued tokens against their stores (${verification.invalid} invalid), ${verification.sampledOverHttp} over HTTP (${verification.invalidOverHttp} invalid)`,
    );

    // Scale (SQLite): the same cases with many tokens stored, seeded through the store, not over HTTP.
    // Not in the smoke run: the cases and the servers are those above, which it has proved run.
    let scaleMeasurements: Awaited<ReturnType<typeof measure>> = [];
    if (!options.smoke) {
      const seeding = openSqliteStore(sqlitePath);
      const seedStart = Date.now();
      await seedTokens(seeding, tessera.fixture.appId, options.scaleTokens - options.baseTokens);
      await seeding.close();
      log(`\nseeded ${options.scaleTokens - options.baseTokens} more tokens in ${((Date.now() - seedStart) / 1000).toFixed(1)} s`);
      scaleMeasurements = await measure(
        `${options.scaleTokens} tokens stored`,
        [...referenceCases, ...tesseraCases(tessera.fixture)],
        options,
        tokensDirOf,
      );
    }
    const memory = memoryOf(tessera.server.child.pid!);

    const run: BenchRun = {
      startedAt: new Date().toISOString(),
      mode: options.smoke ? 'smoke' : 'full',
      options: { ...options },
      machine: machineDescription(),
      measurements: [...measurements, ...scaleMeasurements],
      verification,
      tesseraMemory: memory,
      phases: { base: `${options.baseTokens} tokens stored`, scale: `${options.scaleTokens} tokens stored` },
    };
    const failed = run.measurements.reduce((sum, m) => sum + failuresOf(m.one) + failuresOf(m.fifty), 0);
    writeReport(run, { root: ROOT, writeDocs: !options.smoke, resultsDir: options.smoke ? workDir : join(ROOT, 'bench', 'results') });
    if (failed > 0 || verification.invalid > 0 || verification.invalidOverHttp > 0) {
      log(`\nFAILED: ${failed} failed requests, ${verification.invalid + verification.invalidOverHttp} invalid tokens`);
      return 1;
    }
    return 0;
  } finally {
    await Promise.all(servers.map((server) => server.stop()));
    await Promise.all(cleanups.map((cleanup) => cleanup().catch(() => {})));
    rmSync(workDir, { recursive: true, force: true });
  }
}

function machineDescription() {
  const cpuinfo = readFileSync('/proc/cpuinfo', 'utf8');
  return {
    node: process.version,
    cpu: /model name\s*:\s*(.*)/.exec(cpuinfo)?.[1] ?? 'unknown',
    cores: (cpuinfo.match(/^processor/gm) ?? []).length,
    wrk: spawnSync('wrk', ['--version'], { encoding: 'utf8' }).stdout.split('\n')[0] ?? 'unknown',
  };
}

process.exitCode = await main();
