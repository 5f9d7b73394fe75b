/** The scale benchmark's figures (bench/scale.ts): summaries, the verdicts, the tables, and the Scale section of docs/benchmarks.md. */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';

export type CaseName = 'whoami-anonymous' | 'whoami-admin' | 'unknown-appid' | 'unknown-token' | 'issue-admin';

/** The case whose smallest size a case is compared with. */
const BASELINE_OF: Record<CaseName, CaseName> = {
  'whoami-anonymous': 'whoami-anonymous',
  'whoami-admin': 'whoami-admin',
  'unknown-appid': 'whoami-anonymous',
  'unknown-token': 'whoami-admin',
  'issue-admin': 'issue-admin',
};

const DESCRIPTION: Record<CaseName, string> = {
  'whoami-anonymous': 'whoami, anonymous token',
  'whoami-admin': 'whoami, admin token',
  'unknown-appid': 'made-up AppIDs (Basic)',
  'unknown-token': 'made-up admin tokens',
  'issue-admin': 'admin token issued',
};

/** The cache whose misses are store reads in each case. */
const STORE_CACHE: Record<CaseName, string> = {
  'whoami-anonymous': 'apps',
  'whoami-admin': 'admin_tokens',
  'unknown-appid': 'apps',
  'unknown-token': 'admin_tokens',
  'issue-admin': 'apps',
};

/** The bar: a check over the largest size costs at most this many times the smallest's CPU. */
export const FLAT_COST_RATIO = 1.3;
/** The import rates `tessera apps import` must reach, apps a second. */
export const IMPORT_TARGETS: Record<string, number> = { sqlite: 5_000, postgres: 2_000 };
/** RSS is flat when the last third of a long run's samples is, on average, within this of the first third. */
export const RSS_FLAT_GROWTH = 0.05;
/** A repetition whose CPU share (`cpuAvailability`) is below this is marked unreliable. */
const RELIABLE_CPU_SHARE = 0.9;

export interface ScaleRun {
  store: 'sqlite' | 'postgres';
  case: CaseName;
  /** Apps (anonymous, issue), admin tokens (admin), or the pool of made-up credentials (unknown-*). */
  size: number;
  /** Apps or admin tokens in the store the run went to. */
  storeSize: number;
  repetition: number;
  cpuShare: number;
  requests: number;
  requestsPerSecond: number;
  latencyUs: { p50: number; p90: number; p99: number; mean: number; max: number };
  /** Answers other than the expected status, and socket errors. */
  failures: number;
  /** The server's user + system CPU time per request. */
  cpuUsPerRequest: number;
  /** PostgreSQL's backends serving the store's database, per request; null on SQLite. */
  postgresCpuUsPerRequest: number | null;
  serverStartRssMb: number;
  rssBeforeMb: number;
  rssAfterMb: number;
  peakRssMb: number;
  /** `tessera_cache_lookups_total` during the run per request, by `cache/result`. */
  lookupsPerRequest: Record<string, number>;
  /** The other `tessera_cache_*` series after the run (entries, bytes: whatever the build exports). */
  cacheMetricsAfter: Record<string, number>;
}

export interface ScaleSummary {
  store: 'sqlite' | 'postgres';
  case: CaseName;
  size: number;
  storeSize: number;
  repetitions: number;
  lowestCpuShare: number;
  /** Fastest and slowest repetition, µs per request: the server, PostgreSQL (null on SQLite), and both. */
  cpuUs: { min: number; max: number };
  postgresUs: { min: number; max: number } | null;
  totalUs: { min: number; max: number };
  /** `totalUs.min` over the same figure at the smallest size of the baseline case, same store; null without one. */
  ratio: number | null;
  requestsPerSecond: number;
  p99Us: number;
  /** Mean over the repetitions, by cache. */
  missesPerRequest: Record<string, number>;
  /** Misses per request of the cache whose misses read the store. */
  storeReadsPerRequest: number;
  rssStartMb: number;
  rssEndMb: number;
  peakRssMb: number;
  failures: number;
}

export interface ImportResult {
  store: 'sqlite' | 'postgres';
  apps: number;
  /** Wall time of the whole command, start-up included (into a store already migrated). */
  seconds: number;
  /** Wall time of `tessera apps list` on the same empty store: the command's start-up. */
  startupSeconds: number;
  appsPerSecond: number;
  /** What `--json` printed. */
  summary?: unknown;
  failed?: string;
}

export interface RssResult {
  store: 'sqlite' | 'postgres';
  minutes: number;
  apps: number;
  adminTokens: number;
  requests: number;
  requestsPerSecond: number;
  failures: number;
  missesPerRequest: number;
  samples: { t: number; rssMb: number }[];
  peakRssMb: number;
  firstThirdMb: number;
  lastThirdMb: number;
  growth: number;
  flat: boolean;
}

export interface ScaleResults {
  startedAt: string;
  mode: 'smoke' | 'partial' | 'full';
  options: Record<string, unknown>;
  machine: { node: string; cpu: string; cores: number; memoryGb: number; wrk: string; postgres: string | null };
  skipped: string[];
  runs: ScaleRun[];
  summaries: ScaleSummary[];
  imports: ImportResult[] | string;
  rss: RssResult[];
}

const mean = (values: number[]) => values.reduce((sum, value) => sum + value, 0) / Math.max(1, values.length);

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

const range = (values: number[]) => ({ min: Math.min(...values), max: Math.max(...values) });

export function summarize(runs: ScaleRun[]): ScaleSummary[] {
  const keys = [...new Set(runs.map((run) => `${run.store}|${run.case}|${run.size}`))];
  const summaries = keys.map((key): ScaleSummary => {
    const group = runs.filter((run) => `${run.store}|${run.case}|${run.size}` === key);
    const first = group[0]!;
    const last = group.at(-1)!;
    // Every cache looked up during the runs, with its misses (0 when it only hit).
    const caches = [...new Set(group.flatMap((run) => Object.keys(run.lookupsPerRequest).map((key) => key.split('/')[0]!)))].sort();
    const missesPerRequest = Object.fromEntries(
      caches.map((cache) => [cache, mean(group.map((run) => run.lookupsPerRequest[`${cache}/miss`] ?? 0))]),
    );
    const postgres = group.map((run) => run.postgresCpuUsPerRequest);
    return {
      store: first.store,
      case: first.case,
      size: first.size,
      storeSize: first.storeSize,
      repetitions: group.length,
      lowestCpuShare: Math.min(...group.map((run) => run.cpuShare)),
      cpuUs: range(group.map((run) => run.cpuUsPerRequest)),
      postgresUs: postgres.every((value) => value !== null) ? range(postgres) : null,
      totalUs: range(group.map((run) => run.cpuUsPerRequest + (run.postgresCpuUsPerRequest ?? 0))),
      ratio: null,
      requestsPerSecond: median(group.map((run) => run.requestsPerSecond)),
      p99Us: median(group.map((run) => run.latencyUs.p99)),
      missesPerRequest,
      storeReadsPerRequest: missesPerRequest[STORE_CACHE[first.case]] ?? 0,
      rssStartMb: first.serverStartRssMb,
      rssEndMb: last.rssAfterMb,
      peakRssMb: Math.max(...group.map((run) => run.peakRssMb)),
      failures: group.reduce((sum, run) => sum + run.failures, 0),
    };
  });
  for (const summary of summaries) {
    const baseline = summaries
      .filter((other) => other.store === summary.store && other.case === BASELINE_OF[summary.case])
      .sort((a, b) => a.size - b.size)[0];
    summary.ratio = baseline === undefined ? null : summary.totalUs.min / baseline.totalUs.min;
  }
  return summaries;
}

/** The first third and the last third of the samples (by time), and whether RSS stayed flat between them. */
export function flatness(samples: { t: number; rssMb: number }[]): Pick<RssResult, 'firstThirdMb' | 'lastThirdMb' | 'growth' | 'flat'> {
  const end = samples.at(-1)?.t ?? 0;
  const firstThirdMb = mean(samples.filter((sample) => sample.t <= end / 3).map((sample) => sample.rssMb));
  const lastThirdMb = mean(samples.filter((sample) => sample.t >= (2 * end) / 3).map((sample) => sample.rssMb));
  const growth = lastThirdMb / firstThirdMb - 1;
  return { firstThirdMb, lastThirdMb, growth, flat: growth <= RSS_FLAT_GROWTH };
}

const thousands = (value: number) => Math.round(value).toLocaleString('en-US');
const us = (value: number) => value.toFixed(1);
const span = ({ min, max }: { min: number; max: number }) => (max - min < 0.05 ? us(min) : `${us(min)}–${us(max)}`);

function sizeLabel(summary: ScaleSummary): string {
  switch (summary.case) {
    case 'whoami-anonymous':
    case 'issue-admin':
      return `${thousands(summary.size)} apps`;
    case 'whoami-admin':
      return `${thousands(summary.size)} tokens`;
    case 'unknown-appid':
      return `pool of ${thousands(summary.size)} (${thousands(summary.storeSize)} apps stored)`;
    case 'unknown-token':
      return `pool of ${thousands(summary.size)} (${thousands(summary.storeSize)} tokens stored)`;
  }
}

const CACHE_SHORT: Record<string, string> = { apps: 'apps', admin_tokens: 'admin', anonymous_tokens: 'anon', revoked_tokens: 'revoked' };

/** The misses of the cache that reads the store in this case, and of any other that missed. */
function missesCell(s: ScaleSummary): string {
  return Object.entries(s.missesPerRequest)
    .filter(([cache, value]) => cache === STORE_CACHE[s.case] || value >= 0.005)
    .map(([cache, value]) => `${CACHE_SHORT[cache] ?? cache} ${value.toFixed(2)}`)
    .join(', ');
}

function casesTable(summaries: ScaleSummary[]): string {
  const header = [
    'store',
    'case',
    'size',
    'CPU µs/req',
    'PostgreSQL µs/req',
    '× smallest',
    'req/s',
    'p99 ms',
    'misses/req',
    'RSS MB start → end',
  ];
  const rows = summaries.map((s) => [
    s.store,
    DESCRIPTION[s.case],
    sizeLabel(s),
    span(s.cpuUs),
    s.postgresUs === null ? '—' : span(s.postgresUs),
    s.ratio === null ? '—' : `${s.ratio.toFixed(2)}×`,
    thousands(s.requestsPerSecond),
    (s.p99Us / 1000).toFixed(1),
    missesCell(s),
    `${s.rssStartMb.toFixed(0)} → ${s.rssEndMb.toFixed(0)}`,
  ]);
  return [header, header.map(() => '---'), ...rows].map((row) => `| ${row.join(' | ')} |`).join('\n');
}

interface Verdict {
  met: boolean;
  description: string;
  value: string;
}

function verdicts(results: ScaleResults): Verdict[] {
  const checks: Verdict[] = [];
  for (const s of results.summaries) {
    if ((s.case === 'whoami-anonymous' || s.case === 'whoami-admin') && s.ratio !== null) {
      const largest = Math.max(...results.summaries.filter((o) => o.store === s.store && o.case === s.case).map((o) => o.size));
      const smallest = Math.min(...results.summaries.filter((o) => o.store === s.store && o.case === s.case).map((o) => o.size));
      if (s.size !== largest || s.size === smallest) continue;
      checks.push({
        met: s.ratio <= FLAT_COST_RATIO,
        description: `${s.store}, ${DESCRIPTION[s.case]}: ${sizeLabel(s)} ≤ ${FLAT_COST_RATIO}× the CPU of ${thousands(smallest)}${s.store === 'postgres' ? ' (server + PostgreSQL)' : ''}`,
        value: `${s.ratio.toFixed(2)}×`,
      });
    }
    if (s.case === 'unknown-appid' || s.case === 'unknown-token') {
      const requests = results.runs
        .filter((run) => run.store === s.store && run.case === s.case)
        .reduce((sum, run) => sum + run.requests, 0);
      // Once each: at most one store read per made-up credential over the measured runs.
      const onceEach = s.size / Math.max(1, requests / s.repetitions);
      checks.push({
        met: s.storeReadsPerRequest <= onceEach,
        description: `${s.store}, ${DESCRIPTION[s.case]}: store reads per request ≤ once per credential (${onceEach.toFixed(3)})`,
        value: s.storeReadsPerRequest.toFixed(3),
      });
    }
  }
  if (typeof results.imports !== 'string') {
    for (const entry of results.imports) {
      const target = IMPORT_TARGETS[entry.store]!;
      checks.push({
        met: entry.failed === undefined && entry.appsPerSecond >= target,
        description: `${entry.store}: tessera apps import ≥ ${thousands(target)} apps/s`,
        value: entry.failed === undefined ? `${thousands(entry.appsPerSecond)} apps/s` : 'failed',
      });
    }
  }
  for (const entry of results.rss) {
    checks.push({
      met: entry.flat,
      description: `${entry.store}: RSS flat over ${entry.minutes} min (last third within ${RSS_FLAT_GROWTH * 100} % of the first)`,
      value: `${entry.firstThirdMb.toFixed(0)} → ${entry.lastThirdMb.toFixed(0)} MB (${(entry.growth * 100).toFixed(1)} %)`,
    });
  }
  const failures = results.runs.reduce((sum, run) => sum + run.failures, 0) + results.rss.reduce((sum, entry) => sum + entry.failures, 0);
  checks.push({ met: failures === 0, description: 'every request answered as expected', value: String(failures) });
  return checks;
}

function machineLine(results: ScaleResults): string {
  const m = results.machine;
  const cacheMb = results.options.cacheMb as number | undefined;
  return (
    `Run of ${results.startedAt} (${results.mode}); ${m.cpu}, ${m.cores} cores, ${m.memoryGb} GB, Node ${m.node}, ${m.wrk}` +
    (m.postgres === null ? '' : `, PostgreSQL ${m.postgres}`) +
    `; CACHE_MEMORY_MB ${cacheMb === undefined ? 'unset (the default)' : String(cacheMb)}.`
  );
}

function importSection(results: ScaleResults): string {
  if (typeof results.imports === 'string') return `Import: ${results.imports}.`;
  const rows = results.imports.map(
    (entry) =>
      `| ${entry.store} | ${thousands(entry.apps)} | ${entry.failed === undefined ? entry.seconds.toFixed(2) : 'failed'} | ${entry.startupSeconds.toFixed(2)} | ` +
      `${entry.failed === undefined ? thousands(entry.appsPerSecond) : '—'} |`,
  );
  return [
    '| store | apps | seconds (whole command) | of which start-up (apps list) | apps/s (whole command) |',
    '|---|---|---|---|---|',
    ...rows,
  ].join('\n');
}

function rssSection(results: ScaleResults): string {
  const rows = results.rss.map(
    (entry) =>
      `| ${entry.store} | ${entry.minutes} min, ${thousands(entry.apps)} apps and ${thousands(entry.adminTokens)} admin tokens | ${thousands(entry.requestsPerSecond)} | ${entry.missesPerRequest.toFixed(3)} | ` +
      `${entry.firstThirdMb.toFixed(0)} → ${entry.lastThirdMb.toFixed(0)} MB (${(entry.growth * 100).toFixed(1)} %), peak ${entry.peakRssMb.toFixed(0)} MB | ${entry.flat ? 'flat' : 'growing'} |`,
  );
  return ['| store | run | req/s | misses/req | RSS first third → last third | |', '|---|---|---|---|---|---|', ...rows].join('\n');
}

function repetitionsLine(results: ScaleResults): string {
  const low = results.summaries.filter((s) => s.lowestCpuShare < RELIABLE_CPU_SHARE);
  const lowest = Math.min(...results.runs.map((run) => run.cpuShare));
  return results.runs.length === 0
    ? ''
    : `CPU available before the repetitions: lowest ${(lowest * 100).toFixed(1)} %` +
        (low.length > 0 ? ` (below ${RELIABLE_CPU_SHARE * 100} % in ${low.length} row(s): read those with care)` : '') +
        '.';
}

function verdictTable(results: ScaleResults): string {
  return [
    '| | target | measured |',
    '|---|---|---|',
    ...verdicts(results).map((v) => `| ${v.met ? '✅' : '❌'} | ${v.description} | ${v.value} |`),
  ].join('\n');
}

/** The whole report, as printed and as written into the docs. */
export function printReport(results: ScaleResults): string {
  return [
    machineLine(results),
    ...results.skipped.map((line) => `Skipped: ${line}.`),
    ...(results.runs.length > 0 ? [repetitionsLine(results)] : []),
    '',
    results.summaries.length > 0 ? casesTable(results.summaries) : 'No check was measured (--cases none).',
    '',
    '#### Import',
    '',
    importSection(results),
    ...(results.rss.length > 0 ? ['', '#### RSS over a long run', '', rssSection(results)] : []),
    '',
    '#### Targets',
    '',
    verdictTable(results),
  ].join('\n');
}

const CASES_BEGIN = '<!-- bench-scale:begin (generated by a full run of npm run bench:scale; edit outside these markers) -->';
const CASES_END = '<!-- bench-scale:end -->';
const RSS_BEGIN = '<!-- bench-scale-rss:begin (generated by npm run bench:scale -- --rss-minutes 10; edit outside these markers) -->';
const RSS_END = '<!-- bench-scale-rss:end -->';

function replaceBetween(text: string, begin: string, end: string, content: string): string {
  const start = text.indexOf(begin);
  const stop = text.indexOf(end);
  const block = `${begin}\n${content}\n${end}`;
  if (start >= 0 && stop > start) return text.slice(0, start) + block + text.slice(stop + end.length);
  return `${text.trimEnd()}\n\n${block}\n`;
}

/** Rewrites the generated parts of the Scale section: the cases (a full run), the long RSS run (≥ 10 minutes). */
export function writeScaleDocs(path: string, results: ScaleResults, parts: { cases: boolean; rss: boolean }): void {
  let text = existsSync(path) ? readFileSync(path, 'utf8') : '# Benchmarks\n';
  if (!text.includes(CASES_BEGIN) && !text.includes(RSS_BEGIN)) text = `${text.trimEnd()}\n\n## Scale\n`;
  if (parts.cases) {
    const content = [
      machineLine(results),
      repetitionsLine(results),
      '',
      casesTable(results.summaries),
      '',
      '#### Import',
      '',
      importSection(results),
      '',
      '#### Targets',
      '',
      verdictTable({ ...results, rss: [] }),
    ].join('\n');
    text = replaceBetween(text, CASES_BEGIN, CASES_END, content);
  }
  if (parts.rss) {
    const rssOnly: ScaleResults = { ...results, runs: [], summaries: [], imports: 'not part of this run' };
    const rssChecks = verdicts(rssOnly).filter((v) => v.description.includes('RSS'));
    const content = [
      machineLine(results),
      '',
      rssSection(results),
      '',
      '| | target | measured |',
      '|---|---|---|',
      ...rssChecks.map((v) => `| ${v.met ? '✅' : '❌'} | ${v.description} | ${v.value} |`),
    ].join('\n');
    text = replaceBetween(text, RSS_BEGIN, RSS_END, content);
  }
  writeFileSync(path, text.endsWith('\n') ? text : `${text}\n`);
}
