import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CaseKind, TargetCheck } from './cases.js';
import { CEILING, PEER } from './cases.js';
import type { LoadResult } from './processes.js';
import { BESIDE_CONNECTIONS, tailChecks, tailTable, type TailMeasurement } from './tail.js';

export type Phase = string;

export interface Measurement {
  phase: Phase;
  repetition: number;
  /** Share of wall time a spinning process got on the busier core just before this repetition. */
  cpuShare: number;
  case: string;
  target: string;
  kind: CaseKind;
  one: LoadResult;
  fifty: LoadResult;
}

export interface BenchRun {
  startedAt: string;
  mode: 'smoke' | 'full';
  options: Record<string, unknown>;
  machine: Record<string, unknown>;
  measurements: Measurement[];
  /** The tail (bench/tail.ts), measured after the base phase. */
  tail: TailMeasurement[];
  verification: { checked: number; invalid: number; sampledOverHttp: number; invalidOverHttp: number };
  tesseraMemory: { rssMb: number; peakRssMb: number };
  phases: { base: Phase; scale: Phase };
}

/** A repetition whose CPU share is below this is marked unreliable and left out of the medians. */
export const RELIABLE_CPU_SHARE = 0.9;

export interface CaseSummary {
  phase: Phase;
  case: string;
  target: string;
  kind: CaseKind;
  /** 1 connection: median round trip and p10 (µs), and the median ratio of the round trip to the ceiling's. */
  rttP50Us: number;
  rttP10Us: number;
  rttRatio: number;
  /** 50 connections: throughput, its median ratio to the ceiling's, and latency percentiles (µs). */
  requestsPerSecond: number;
  throughputRatio: number;
  p50Us: number;
  p99Us: number;
  failures: number;
  repetitionsUsed: number;
}

export function median(values: number[]): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

export function summarize(run: BenchRun): CaseSummary[] {
  const summaries: CaseSummary[] = [];
  for (const phase of [run.phases.base, run.phases.scale]) {
    const inPhase = run.measurements.filter((m) => m.phase === phase);
    const reliable = new Set(inPhase.filter((m) => m.cpuShare >= RELIABLE_CPU_SHARE).map((m) => m.repetition));
    // Medians over the reliable repetitions, unless fewer than two are: then over all of them.
    const used = (m: Measurement) => (reliable.size >= 2 ? reliable.has(m.repetition) : true);
    for (const name of [...new Set(inPhase.map((m) => m.case))]) {
      const runs = inPhase.filter((m) => m.case === name && used(m));
      const first = runs[0]!;
      const ceilingOf = (m: Measurement) =>
        inPhase.find((c) => c.target === CEILING && c.kind === m.kind && c.repetition === m.repetition)!;
      summaries.push({
        phase,
        case: name,
        target: first.target,
        kind: first.kind,
        rttP50Us: median(runs.map((m) => m.one.latencyUs.p50)),
        rttP10Us: median(runs.map((m) => m.one.latencyUs.p10)),
        rttRatio: median(runs.map((m) => m.one.latencyUs.p50 / ceilingOf(m).one.latencyUs.p50)),
        requestsPerSecond: median(runs.map((m) => m.fifty.requestsPerSecond)),
        throughputRatio: median(runs.map((m) => m.fifty.requestsPerSecond / ceilingOf(m).fifty.requestsPerSecond)),
        p50Us: median(runs.map((m) => m.fifty.latencyUs.p50)),
        p99Us: median(runs.map((m) => m.fifty.latencyUs.p99)),
        failures: inPhase
          .filter((m) => m.case === name)
          .reduce(
            (sum, m) =>
              sum + Object.values(m.one.errors).reduce((a, b) => a + b, 0) + Object.values(m.fifty.errors).reduce((a, b) => a + b, 0),
            0,
          ),
        repetitionsUsed: runs.length,
      });
    }
  }
  return summaries;
}

export function checkTargets(run: BenchRun, summaries: CaseSummary[]): TargetCheck[] {
  const base = summaries.filter((s) => s.phase === run.phases.base);
  const scale = summaries.filter((s) => s.phase === run.phases.scale);
  const peer = base.find((s) => s.target === PEER && s.kind === 'issue');
  const checks: TargetCheck[] = [];
  const ratio = (value: number) => `${value.toFixed(2)}×`;
  // The targets are set for the embedded store; other backends are reported beside it.
  for (const s of base.filter((s) => s.target === 'tessera/sqlite')) {
    if (s.kind === 'issue') {
      // An anonymous token writes nothing (it is self-verifying): its target is close to the ceiling.
      const floor = s.case.endsWith('anonymous token') ? 0.9 : 0.6;
      checks.push({
        description: `${s.case}: throughput ≥ ${floor} × ceiling (50 conn)`,
        value: ratio(s.throughputRatio),
        met: s.throughputRatio >= floor,
      });
      if (peer !== undefined) {
        const overPeer = s.requestsPerSecond / peer.requestsPerSecond;
        checks.push({ description: `${s.case}: throughput ≥ 8 × oidc-provider's (50 conn)`, value: ratio(overPeer), met: overPeer >= 8 });
      }
      checks.push({ description: `${s.case}: round trip ≤ 2 × ceiling (1 conn, median)`, value: ratio(s.rttRatio), met: s.rttRatio <= 2 });
    } else {
      checks.push({
        description: `${s.case}: throughput ≥ 0.8 × ceiling's Map lookup (50 conn)`,
        value: ratio(s.throughputRatio),
        met: s.throughputRatio >= 0.8,
      });
      checks.push({
        description: `${s.case}: round trip ≤ 1.3 × ceiling's (1 conn, median)`,
        value: ratio(s.rttRatio),
        met: s.rttRatio <= 1.3,
      });
    }
    const scaled = scale.find((other) => other.case === s.case);
    if (scaled !== undefined) {
      const throughputChange = scaled.throughputRatio / s.throughputRatio - 1;
      const rttChange = scaled.rttRatio / s.rttRatio - 1;
      const worst = Math.max(-throughputChange, rttChange);
      checks.push({
        description: `${s.case}: with ${run.phases.scale} within 10 % of ${run.phases.base}`,
        value: `throughput ${(throughputChange * 100).toFixed(1)} %, round trip ${(rttChange * 100).toFixed(1)} %`,
        met: worst <= 0.1,
      });
    }
  }
  checks.push({
    description: `Tessera's RSS after the scale phase ≤ 200 MB`,
    value: `${run.tesseraMemory.rssMb.toFixed(0)} MB (peak ${run.tesseraMemory.peakRssMb.toFixed(0)} MB)`,
    met: run.tesseraMemory.peakRssMb <= 200,
  });
  checks.push(...tailChecks(run.tail, CEILING));
  const failures = summaries.reduce((sum, s) => sum + s.failures, 0) + run.tail.reduce((sum, m) => sum + m.failures, 0);
  checks.push({ description: 'no request failed', value: String(failures), met: failures === 0 });
  const v = run.verification;
  checks.push({
    description: 'every token issued during the run still validates',
    value: `${v.checked - v.invalid}/${v.checked} by TokenChecker (the store, or the MAC), ${v.sampledOverHttp - v.invalidOverHttp}/${v.sampledOverHttp} over HTTP`,
    met: v.invalid === 0 && v.invalidOverHttp === 0 && v.checked > 0,
  });
  return checks;
}

function table(summaries: CaseSummary[]): string {
  const header = ['case', 'RTT p50 µs', '× ceiling', 'RTT p10 µs', 'req/s (50 conn)', '× ceiling', 'p50 µs', 'p99 µs'];
  const rows = summaries.map((s) => [
    s.case,
    String(Math.round(s.rttP50Us)),
    s.rttRatio.toFixed(2),
    String(Math.round(s.rttP10Us)),
    String(Math.round(s.requestsPerSecond)),
    s.throughputRatio.toFixed(2),
    String(Math.round(s.p50Us)),
    String(Math.round(s.p99Us)),
  ]);
  return [header, header.map(() => '---'), ...rows].map((row) => `| ${row.join(' | ')} |`).join('\n');
}

/** Horizontal bars: each case's throughput and round trip as ratios to the ceiling, with the targets drawn in. */
export function chart(run: BenchRun, summaries: CaseSummary[]): string {
  const rows = summaries.filter((s) => s.phase === run.phases.base && s.target !== CEILING);
  const left = 300;
  const width = 880;
  const scaleMax = 2.5;
  const barWidth = (value: number) => Math.max(1, (Math.min(value, scaleMax) / scaleMax) * (width - left - 150));
  const rowHeight = 44;
  const top = 56;
  const height = top + rows.length * rowHeight + 40;
  const x = (value: number) => left + barWidth(value);
  const escape = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;');
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="10" y="20" font-size="15" font-weight="bold">Ratios to a bare node:http server (1.0 = the ceiling), ${escape(run.phases.base)}</text>`,
    `<rect x="10" y="30" width="12" height="10" fill="#2b6cb0"/><text x="26" y="39">throughput at 50 connections (higher is better)</text>`,
    `<rect x="330" y="30" width="12" height="10" fill="#dd8452"/><text x="346" y="39">round trip at 1 connection (lower is better)</text>`,
  ];
  for (const tick of [0, 0.5, 1, 1.5, 2, 2.5]) {
    parts.push(`<line x1="${x(tick)}" y1="${top - 4}" x2="${x(tick)}" y2="${height - 30}" stroke="#ddd"/>`);
    parts.push(`<text x="${x(tick)}" y="${height - 16}" text-anchor="middle">${tick.toFixed(1)}</text>`);
  }
  rows.forEach((s, index) => {
    const y = top + index * rowHeight;
    parts.push(`<text x="${left - 8}" y="${y + 18}" text-anchor="end">${escape(s.case)}</text>`);
    parts.push(`<rect x="${left}" y="${y + 4}" width="${barWidth(s.throughputRatio)}" height="14" fill="#2b6cb0"/>`);
    parts.push(`<text x="${x(s.throughputRatio) + 4}" y="${y + 15}">${s.throughputRatio.toFixed(2)}</text>`);
    parts.push(`<rect x="${left}" y="${y + 20}" width="${barWidth(s.rttRatio)}" height="14" fill="#dd8452"/>`);
    parts.push(
      `<text x="${x(s.rttRatio) + 4}" y="${y + 31}">${s.rttRatio > scaleMax ? `${s.rttRatio.toFixed(1)} (off scale)` : s.rttRatio.toFixed(2)}</text>`,
    );
    if (s.target === 'tessera/sqlite') {
      const throughputTarget = s.kind === 'issue' ? 0.6 : 0.8;
      const rttTarget = s.kind === 'issue' ? 2 : 1.3;
      parts.push(
        `<line x1="${x(throughputTarget)}" y1="${y + 2}" x2="${x(throughputTarget)}" y2="${y + 19}" stroke="black" stroke-width="2" stroke-dasharray="3,2"/>`,
      );
      parts.push(
        `<line x1="${x(rttTarget)}" y1="${y + 19}" x2="${x(rttTarget)}" y2="${y + 36}" stroke="black" stroke-width="2" stroke-dasharray="3,2"/>`,
      );
    }
  });
  parts.push(
    `<text x="10" y="${height - 2}" font-size="11" fill="#555">Dashed marks: Tessera's targets. Medians of per-repetition ratios; ${escape(String(run.machine.cpu))}, ${escape(String(run.machine.node))}.</text>`,
  );
  parts.push('</svg>');
  return parts.join('\n');
}

const BEGIN = '<!-- bench:begin (generated by npm run bench; edit outside these markers) -->';
const END = '<!-- bench:end -->';

export function writeReport(run: BenchRun, options: { root: string; writeDocs: boolean; resultsDir: string }): void {
  const summaries = summarize(run);
  const checks = checkTargets(run, summaries);
  const reps = [...new Set(run.measurements.map((m) => `${m.phase}#${m.repetition}`))].map((key) => {
    const m = run.measurements.find((candidate) => `${candidate.phase}#${candidate.repetition}` === key)!;
    return `${key}: CPU ${(m.cpuShare * 100).toFixed(1)} %${m.cpuShare < RELIABLE_CPU_SHARE ? ' (unreliable)' : ''}`;
  });
  const base = summaries.filter((s) => s.phase === run.phases.base);
  const scale = summaries.filter((s) => s.phase === run.phases.scale);
  const verdicts = checks.map((c) => `| ${c.met ? '✅' : '❌'} | ${c.description} | ${c.value} |`).join('\n');
  const text = [
    `Run of ${run.startedAt} (${run.mode}); ${String(run.machine.cpu)}, ${String(run.machine.cores)} cores, Node ${String(run.machine.node)}, ${String(run.machine.wrk)}.`,
    `Repetitions: ${reps.join('; ')}.`,
    '',
    `### ${run.phases.base}`,
    '',
    table(base),
    '',
    `### ${run.phases.scale}`,
    '',
    table(scale),
    '',
    `### The tail (${BESIDE_CONNECTIONS} connections beside, where there is a load beside)`,
    '',
    tailTable(run.tail, CEILING),
    '',
    '### Targets',
    '',
    '| | target | measured |',
    '|---|---|---|',
    verdicts,
  ].join('\n');
  process.stdout.write(`\n${text}\n`);

  mkdirSync(options.resultsDir, { recursive: true });
  const resultFile = join(options.resultsDir, `${run.startedAt.replace(/[:.]/g, '-')}.json`);
  writeFileSync(resultFile, `${JSON.stringify({ ...run, summaries, checks }, null, 2)}\n`);
  process.stderr.write(`\nresults: ${resultFile}\n`);
  if (!options.writeDocs) return;

  writeFileSync(join(options.root, 'docs', 'benchmarks.svg'), `${chart(run, summaries)}\n`);
  const docPath = join(options.root, 'docs', 'benchmarks.md');
  const generated = `${BEGIN}\n${text}\n\n![Ratios to the ceiling](benchmarks.svg)\n${END}`;
  const current = existsSync(docPath) ? readFileSync(docPath, 'utf8') : `# Benchmarks\n\n${BEGIN}\n${END}\n`;
  const start = current.indexOf(BEGIN);
  const end = current.indexOf(END);
  const updated =
    start >= 0 && end > start ? current.slice(0, start) + generated + current.slice(end + END.length) : `${current}\n${generated}\n`;
  writeFileSync(docPath, updated);
  process.stderr.write(`updated docs/benchmarks.md and docs/benchmarks.svg\n`);
}
