/**
 * `npm run bench`: Tessera against a bare node:http ceiling and node-oidc-provider, in one run on
 * this machine. `npm run bench -- --smoke` is the quick version CI runs so that the benchmark never
 * rots (a second per case, no verdict on the targets). See docs/benchmarks.md for the method.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openSqliteStore } from '../src/store/sqlite/store.js';
import { openStore } from '../src/store/open.js';
import { createTessera } from '../src/tessera.js';
import { CEILING, ceilingCases, peerCases, tesseraCases, type BenchCase } from './cases.js';
import {
  cpuAvailability,
  failuresOf,
  requireTools,
  memoryOf,
  runLoad,
  startPinnedServer,
  type LoadResult,
  type RunningServer,
} from './processes.js';
import { writeReport, type BenchRun, type Measurement, type Phase } from './report.js';
import { OIDC_CLIENT } from './servers/oidc-client.js';
import { ceilingTailScenarios, measureTail, tesseraTailScenarios } from './tail.js';
import { seedTokens, startTessera, startTesseraOnPostgres, type TesseraTarget } from './targets.js';

interface Options {
  smoke: boolean;
  seconds: number;
  warmupSeconds: number;
  repetitions: number;
  baseTokens: number;
  scaleTokens: number;
  /** How long each scenario of the tail runs (bench/tail.ts). */
  tailSeconds: number;
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
    tailSeconds: number('--tail-seconds', smoke ? 1 : 20),
  };
}

const log = (line: string) => process.stderr.write(`${line}\n`);

async function oidcToken(url: string, clientBasic: string): Promise<string> {
  const response = await fetch(`${url}/token`, {
    method: 'POST',
    headers: { authorization: clientBasic, 'content-type': 'application/x-www-form-urlencoded' },
    body: 'grant_type=client_credentials',
  });
  if (response.status !== 200) throw new Error(`oidc-provider token request failed: ${response.status}`);
  return ((await response.json()) as { access_token: string }).access_token;
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
    log(`\n[tail] ${options.tailSeconds} s a scenario`);
    const tail = await measureTail(
      [
        { target: CEILING, pid: ceiling.child.pid!, scenarios: ceilingTailScenarios(referenceCases) },
        ...targets.map((t) => ({
          target: t.fixture.target,
          pid: t.server.child.pid!,
          probeFile: t.probeFile,
          scenarios: tesseraTailScenarios(t.fixture),
        })),
      ],
      options.tailSeconds,
      log,
    );
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
      tail,
      verification,
      tesseraMemory: memory,
      phases: { base: `${options.baseTokens} tokens stored`, scale: `${options.scaleTokens} tokens stored` },
    };
    const failed =
      run.measurements.reduce((sum, m) => sum + failuresOf(m.one) + failuresOf(m.fifty), 0) + tail.reduce((sum, m) => sum + m.failures, 0);
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
