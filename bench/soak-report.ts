import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import type { ProbeLine } from './soak-probe.js';

/** One sample taken by the soak every 10 s, from outside the server. */
export interface SoakSample {
  /** Seconds since the load started. */
  t: number;
  /** VmRSS and VmHWM of the server process (/proc/PID/status). */
  rssMb: number;
  peakRssMb: number;
  store: { bytes: number; tokens: number; events: number };
}

/** What wrk's soak script reports at the end (bench/wrk/soak.lua). */
export interface LoadTotals {
  requests: number;
  durationUs: number;
  errors: { connect: number; read: number; write: number; status: number; timeout: number };
  latencyUs: { p50: number; p90: number; p99: number; p999: number; mean: number; max: number };
  issued: number;
  checked: number;
  revoked: number;
  dropped: number;
  failed: number;
  failedByStatus: Record<string, number>;
}

export interface SoakRun {
  startedAt: string;
  backend: 'sqlite' | 'postgres';
  options: { minutes: number; connections: number; sampleSeconds: number; tokenSeconds: number };
  machine: Record<string, unknown>;
  /** Share of wall time a spinning process got on each core, before and after (1 = the host paused nothing). */
  cpuShare: { before: number; after: number };
  load: LoadTotals;
  samples: SoakSample[];
  /** The server's own lines (event-loop delay, heap), with `t` in seconds since the load started. */
  probe: (ProbeLine & { t: number })[];
  serverExit: { code: number | null; signal: string | null };
}

export interface Verdict {
  warmupMinutes: number;
  /**
   * The lowest RSS of each window (a minute, or a quarter of a shorter run) after the warm-up: the
   * level a garbage collection brings it back to. Growth is judged on these floors over the second
   * half of the run, where the load has settled: a peak says how much garbage there was, a rising
   * floor is what a leak looks like.
   */
  floors: {
    windowMinutes: number;
    values: { from: number; mb: number; requestsPerSecond: number }[];
    firstMb: number;
    lastMb: number;
    /** Least-squares slope of the floors of the second half, and the growth it makes over that half. */
    lastHalfSlopeMbPerMinute: number;
    lastHalfGrowthMb: number;
    /** Growth over the second half beyond max(5 MB, 5 %). */
    grows: boolean;
  };
  rss: {
    /** Means over the first and the last quarter of the time after the warm-up. */
    firstQuarterMb: number;
    lastQuarterMb: number;
    growthMb: number;
    /** Least-squares slope over the time after the warm-up. */
    slopeMbPerMinute: number;
    maxMb: number;
  };
  heapUsed: { firstQuarterMb: number; lastQuarterMb: number };
  eventLoopDelay: {
    /** Medians of the 10-s p99s over the first and last quarter after the warm-up, and their maximum. */
    firstQuarterP99Ms: number;
    lastQuarterP99Ms: number;
    maxP99Ms: number;
    medianP50Ms: number;
    /** The last quarter's p99 more than twice the first's plus 1 ms. */
    grows: boolean;
  };
  throughput: { overallPerSecond: number; firstQuarterPerSecond: number; lastQuarterPerSecond: number };
  store: { firstQuarterTokens: number; lastQuarterTokens: number; lastEvents: number; lastMb: number };
  failures: number;
  verdict: string;
}

const mean = (values: number[]) => (values.length === 0 ? NaN : values.reduce((sum, value) => sum + value, 0) / values.length);
const median = (values: number[]) => {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
};
const round = (value: number, digits = 1) => Number(value.toFixed(digits));

function slope(points: { x: number; y: number }[]): number {
  const mx = mean(points.map((p) => p.x));
  const my = mean(points.map((p) => p.y));
  const num = points.reduce((sum, p) => sum + (p.x - mx) * (p.y - my), 0);
  const den = points.reduce((sum, p) => sum + (p.x - mx) ** 2, 0);
  return den === 0 ? 0 : num / den;
}

export function warmupMinutesOf(minutes: number): number {
  return Math.min(2, minutes * 0.2);
}

export function verdictOf(run: SoakRun): Verdict {
  const warmupMinutes = warmupMinutesOf(run.options.minutes);
  const start = warmupMinutes * 60;
  const end = run.options.minutes * 60;
  const quarter = (end - start) / 4;
  const inFirst = (t: number) => t >= start && t <= start + quarter;
  const inLast = (t: number) => t >= end - quarter && t <= end + 1;
  const perSecond = (lines: ProbeLine[]) => mean(lines.map((p) => (p.responses * 1000) / p.intervalMs));
  const after = run.samples.filter((s) => s.t >= start && s.t <= end + 1);
  const probeAfter = run.probe.filter((p) => p.t >= start && p.t <= end + 1);

  const rssFirst = mean(run.samples.filter((s) => inFirst(s.t)).map((s) => s.rssMb));
  const rssLast = mean(run.samples.filter((s) => inLast(s.t)).map((s) => s.rssMb));
  const growthMb = rssLast - rssFirst;

  const windowSeconds = Math.min(60, (end - start) / 4);
  const floors: Verdict['floors']['values'] = [];
  for (let from = start; from + windowSeconds <= end + 1; from += windowSeconds) {
    const inWindow = (t: number) => t >= from && t < from + windowSeconds + (from + windowSeconds >= end ? 1 : 0);
    const rssValues = run.samples.filter((s) => inWindow(s.t)).map((s) => s.rssMb);
    if (rssValues.length === 0) continue;
    const lines = run.probe.filter((p) => inWindow(p.t));
    floors.push({ from: round(from / 60, 2), mb: Math.min(...rssValues), requestsPerSecond: Math.round(perSecond(lines)) });
  }
  const lastHalf = floors.slice(Math.floor(floors.length / 2));
  const lastHalfSlope = lastHalf.length >= 2 ? slope(lastHalf.map((f) => ({ x: f.from, y: f.mb }))) : 0;
  const lastHalfGrowth = lastHalf.length >= 2 ? lastHalfSlope * (lastHalf.at(-1)!.from - lastHalf[0]!.from + windowSeconds / 60) : 0;
  const floorGrows = lastHalfGrowth > Math.max(5, (lastHalf[0]?.mb ?? 0) * 0.05);
  const p99First = median(run.probe.filter((p) => inFirst(p.t)).map((p) => p.eventLoopDelayMs.p99));
  const p99Last = median(run.probe.filter((p) => inLast(p.t)).map((p) => p.eventLoopDelayMs.p99));
  const delayGrows = p99Last > 2 * p99First + 1;
  const last = run.samples.at(-1);
  const failures = run.load.failed + run.load.errors.connect + run.load.errors.read + run.load.errors.write + run.load.errors.timeout;

  const rss = {
    firstQuarterMb: round(rssFirst),
    lastQuarterMb: round(rssLast),
    growthMb: round(growthMb),
    slopeMbPerMinute: round(slope(after.map((s) => ({ x: s.t / 60, y: s.rssMb }))), 2),
    maxMb: round(Math.max(...after.map((s) => s.rssMb))),
  };
  const eventLoopDelay = {
    firstQuarterP99Ms: round(p99First, 2),
    lastQuarterP99Ms: round(p99Last, 2),
    maxP99Ms: round(Math.max(...probeAfter.map((p) => p.eventLoopDelayMs.p99)), 2),
    medianP50Ms: round(median(probeAfter.map((p) => p.eventLoopDelayMs.p50)), 2),
    grows: delayGrows,
  };
  const signed = (value: number, digits = 1) => `${value >= 0 ? '+' : ''}${round(value, digits)}`;
  const span = lastHalf.length >= 2 ? round(lastHalf.at(-1)!.from - lastHalf[0]!.from + windowSeconds / 60, 1) : 0;
  const verdict =
    `${floorGrows ? 'MEMORY GREW' : 'No memory growth'}: the RSS floor went ${lastHalf[0]?.mb ?? NaN} → ${lastHalf.at(-1)?.mb ?? NaN} MB ` +
    `over the last ${span} minutes (${signed(lastHalfSlope, 2)} MB/min); ` +
    `${delayGrows ? 'event-loop delay GREW' : 'event-loop delay steady'}: p99 ${eventLoopDelay.firstQuarterP99Ms} ms → ${eventLoopDelay.lastQuarterP99Ms} ms.`;
  return {
    warmupMinutes: round(warmupMinutes, 2),
    floors: {
      windowMinutes: round(windowSeconds / 60, 2),
      values: floors,
      firstMb: floors[0]?.mb ?? NaN,
      lastMb: floors.at(-1)?.mb ?? NaN,
      lastHalfSlopeMbPerMinute: round(lastHalfSlope, 2),
      lastHalfGrowthMb: round(lastHalfGrowth),
      grows: floorGrows,
    },
    rss,
    heapUsed: {
      firstQuarterMb: round(mean(run.probe.filter((p) => inFirst(p.t)).map((p) => p.memoryMb.heapUsed))),
      lastQuarterMb: round(mean(run.probe.filter((p) => inLast(p.t)).map((p) => p.memoryMb.heapUsed))),
    },
    eventLoopDelay,
    throughput: {
      overallPerSecond: Math.round(run.load.requests / (run.load.durationUs / 1e6)),
      firstQuarterPerSecond: Math.round(perSecond(run.probe.filter((p) => inFirst(p.t)))),
      lastQuarterPerSecond: Math.round(perSecond(run.probe.filter((p) => inLast(p.t)))),
    },
    store: {
      firstQuarterTokens: Math.round(mean(run.samples.filter((s) => inFirst(s.t)).map((s) => s.store.tokens))),
      lastQuarterTokens: Math.round(mean(run.samples.filter((s) => inLast(s.t)).map((s) => s.store.tokens))),
      lastEvents: last?.store.events ?? 0,
      lastMb: round((last?.store.bytes ?? 0) / 1048576),
    },
    failures,
    verdict,
  };
}

/** Two panels over the same minutes: memory (RSS, JS heap) and event-loop delay (p99, p50). */
export function soakChart(run: SoakRun, verdict: Verdict): string {
  const width = 880;
  const left = 64;
  const right = width - 24;
  const panelHeight = 190;
  const tops = [96, 96 + panelHeight + 50];
  const height = tops[1]! + panelHeight + 56;
  const minutes = run.options.minutes;
  const x = (seconds: number) => left + (Math.min(Math.max(seconds, 0), minutes * 60) / (minutes * 60)) * (right - left);
  const escape = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;');
  const niceMax = (value: number) => {
    const magnitude = 10 ** Math.floor(Math.log10(Math.max(value, 1e-9)));
    return [1, 2, 4, 6, 8, 10].map((step) => step * magnitude).find((candidate) => candidate >= value)!;
  };
  const probe = run.probe.filter((p) => p.t >= 0 && p.t <= minutes * 60 + 1);
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="10" y="20" font-size="15" font-weight="bold">Soak: ${minutes} minutes of mixed load on ${run.backend === 'sqlite' ? 'SQLite' : 'PostgreSQL'}, ${run.options.connections} connections, ${verdict.throughput.overallPerSecond.toLocaleString('en-US')} requests/s</text>`,
  ];
  verdict.verdict.split('; ').forEach((line, i, lines) => {
    parts.push(`<text x="10" y="${40 + i * 16}" font-size="12" fill="#333">${escape(i < lines.length - 1 ? `${line};` : line)}</text>`);
  });
  const panel = (
    top: number,
    title: string,
    unit: string,
    series: { label: string; color: string; dash?: string; points: { t: number; v: number }[] }[],
  ) => {
    const max = niceMax(Math.max(...series.flatMap((s) => s.points.map((p) => p.v))) * 1.1);
    const y = (value: number) => top + panelHeight - (value / max) * panelHeight;
    parts.push(`<rect x="${left}" y="${top}" width="${x(verdict.warmupMinutes * 60) - left}" height="${panelHeight}" fill="#f2f2f2"/>`);
    parts.push(`<text x="${left + 4}" y="${top + 14}" font-size="11" fill="#777">warm-up</text>`);
    for (let i = 0; i <= 4; i++) {
      const value = (max / 4) * i;
      parts.push(`<line x1="${left}" y1="${y(value)}" x2="${right}" y2="${y(value)}" stroke="#ddd"/>`);
      parts.push(`<text x="${left - 6}" y="${y(value) + 4}" text-anchor="end">${Number(value.toPrecision(3))}</text>`);
    }
    parts.push(`<text x="10" y="${top - 10}" font-weight="bold">${escape(title)} (${unit})</text>`);
    let legendX = left + 260;
    for (const s of series) {
      const path = s.points.map((p, i) => `${i === 0 ? 'M' : 'L'}${x(p.t).toFixed(1)},${y(p.v).toFixed(1)}`).join(' ');
      parts.push(
        `<path d="${path}" fill="none" stroke="${s.color}" stroke-width="2"${s.dash === undefined ? '' : ` stroke-dasharray="${s.dash}"`}/>`,
      );
      parts.push(
        `<line x1="${legendX}" y1="${top - 14}" x2="${legendX + 24}" y2="${top - 14}" stroke="${s.color}" stroke-width="2"${s.dash === undefined ? '' : ` stroke-dasharray="${s.dash}"`}/>`,
      );
      parts.push(`<text x="${legendX + 30}" y="${top - 10}">${escape(s.label)}</text>`);
      legendX += 40 + s.label.length * 7;
    }
    parts.push(`<line x1="${left}" y1="${top + panelHeight}" x2="${right}" y2="${top + panelHeight}" stroke="#333"/>`);
  };
  panel(tops[0]!, 'Memory of the server process', 'MB', [
    { label: 'RSS (/proc VmRSS)', color: '#2b6cb0', points: run.samples.map((s) => ({ t: s.t, v: s.rssMb })) },
    {
      label: 'RSS floor of each window',
      color: '#1a365d',
      dash: '2,2',
      points: verdict.floors.values.flatMap((f) => [
        { t: f.from * 60, v: f.mb },
        { t: (f.from + verdict.floors.windowMinutes) * 60, v: f.mb },
      ]),
    },
    { label: 'JS heap used', color: '#dd8452', dash: '5,3', points: probe.map((p) => ({ t: p.t, v: p.memoryMb.heapUsed })) },
  ]);
  panel(tops[1]!, 'Event-loop delay per 10 s', 'ms', [
    { label: 'p99', color: '#c53030', points: probe.map((p) => ({ t: p.t, v: p.eventLoopDelayMs.p99 })) },
    { label: 'p50', color: '#2f855a', dash: '5,3', points: probe.map((p) => ({ t: p.t, v: p.eventLoopDelayMs.p50 })) },
  ]);
  const step = minutes <= 2 ? 0.5 : minutes <= 20 ? 1 : 5;
  for (let minute = 0; minute <= minutes + 1e-9; minute += step) {
    for (const top of tops)
      parts.push(
        `<line x1="${x(minute * 60)}" y1="${top + panelHeight}" x2="${x(minute * 60)}" y2="${top + panelHeight + 4}" stroke="#333"/>`,
      );
    parts.push(`<text x="${x(minute * 60)}" y="${tops[1]! + panelHeight + 18}" text-anchor="middle">${minute}</text>`);
  }
  parts.push(`<text x="${(left + right) / 2}" y="${tops[1]! + panelHeight + 34}" text-anchor="middle">minutes of load</text>`);
  parts.push(
    `<text x="10" y="${height - 6}" font-size="11" fill="#555">${escape(`Server pinned to core 0, wrk to core 1; ${String(run.machine.cpu)}, ${String(run.machine.node)}; ${run.startedAt}.`)}</text>`,
  );
  parts.push('</svg>');
  return parts.join('\n');
}

const BEGIN = '<!-- soak:begin (generated by npm run soak; edit outside these markers) -->';
const END = '<!-- soak:end -->';

/** The figures of a run as Markdown, for docs/soak.md. */
export function soakFigures(run: SoakRun, verdict: Verdict): string {
  const v = verdict;
  const statuses = Object.entries(run.load.failedByStatus)
    .map(([status, count]) => `${count} × ${status}`)
    .join(', ');
  return [
    `**Verdict: ${v.verdict}**`,
    '',
    `Run of ${run.startedAt}: ${run.options.minutes} minutes on ${run.backend === 'sqlite' ? 'SQLite' : 'PostgreSQL'}, ${run.options.connections} connections, CPU available ${Math.round(run.cpuShare.before * 100)} % / ${Math.round(run.cpuShare.after * 100)} % of wall time before / after.`,
    '',
    '| | first quarter after warm-up | last quarter | |',
    '|---|---|---|---|',
    `| RSS, mean | ${v.rss.firstQuarterMb} MB | ${v.rss.lastQuarterMb} MB | max ${v.rss.maxMb} MB |`,
    `| RSS floor (lowest of each ${v.floors.windowMinutes === 1 ? 'minute' : `${v.floors.windowMinutes} min`}) | ${v.floors.firstMb} MB (first window) | ${v.floors.lastMb} MB (last window) | second half: ${v.floors.lastHalfSlopeMbPerMinute} MB/min, ${v.floors.lastHalfGrowthMb >= 0 ? '+' : ''}${v.floors.lastHalfGrowthMb} MB |`,
    `| JS heap used | ${v.heapUsed.firstQuarterMb} MB | ${v.heapUsed.lastQuarterMb} MB | |`,
    `| event-loop delay p99 (median of 10-s windows) | ${v.eventLoopDelay.firstQuarterP99Ms} ms | ${v.eventLoopDelay.lastQuarterP99Ms} ms | worst window ${v.eventLoopDelay.maxP99Ms} ms; p50 ${v.eventLoopDelay.medianP50Ms} ms |`,
    `| responses/s | ${v.throughput.firstQuarterPerSecond.toLocaleString('en-US')} | ${v.throughput.lastQuarterPerSecond.toLocaleString('en-US')} | overall ${v.throughput.overallPerSecond.toLocaleString('en-US')} |`,
    `| tokens stored | ${v.store.firstQuarterTokens.toLocaleString('en-US')} | ${v.store.lastQuarterTokens.toLocaleString('en-US')} | at the end: ${v.store.lastEvents.toLocaleString('en-US')} events, ${v.store.lastMb} MB of store |`,
    '',
    `RSS floor of each window after the warm-up (minute: MB at requests/s): ${v.floors.values
      .map((f) => `${f.from}: ${f.mb} at ${f.requestsPerSecond.toLocaleString('en-US')}`)
      .join('; ')}.`,
    '',
    `Load: ${run.load.requests.toLocaleString('en-US')} requests: ${run.load.issued.toLocaleString('en-US')} tokens issued, ${run.load.checked.toLocaleString('en-US')} whoami, ` +
      `${run.load.revoked.toLocaleString('en-US')} revoked, ${run.load.dropped.toLocaleString('en-US')} left to expire; ` +
      `latency p50 ${(run.load.latencyUs.p50 / 1000).toFixed(2)} ms, p99 ${(run.load.latencyUs.p99 / 1000).toFixed(2)} ms, max ${(run.load.latencyUs.max / 1000).toFixed(1)} ms; ` +
      `${v.failures} failed${statuses === '' ? '' : ` (${statuses})`}. The server exited with ${run.serverExit.code ?? run.serverExit.signal} on SIGTERM.`,
    '',
    '![RSS and event-loop delay over the soak](soak.svg)',
  ].join('\n');
}

/** Replaces the generated part of docs/soak.md (or writes the file with only that part). */
export function writeSoakDoc(path: string, figures: string): void {
  const generated = `${BEGIN}\n${figures}\n${END}`;
  const current = existsSync(path) ? readFileSync(path, 'utf8') : `# Soak\n\n${BEGIN}\n${END}\n`;
  const startIndex = current.indexOf(BEGIN);
  const endIndex = current.indexOf(END);
  const updated =
    startIndex >= 0 && endIndex > startIndex
      ? `${current.slice(0, startIndex)}${generated}${current.slice(endIndex + END.length)}`
      : `${current.trimEnd()}\n\n${generated}\n`;
  writeFileSync(path, updated);
}
