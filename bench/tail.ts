/**
 * The tail: the slowest token checks and token requests, alone and beside other load, with the
 * server's event-loop delay over the same seconds. Averages and CPU per request (the rest of the
 * benchmark) hide a wait of one request in a hundred; this measures it, as p50/p99/p99.9 of each
 * request timed on the monotonic clock (bench/wrk/tail.lua) and as ratios to the bare ceiling
 * measured in the same run. `npm run bench` runs it
 * after its first phase; `npm run bench:tail` runs it alone. See docs/benchmarks.md, "The tail".
 */
import { readFileSync } from 'node:fs';
import { tesseraCases, type BenchCase, type TargetCheck, type TesseraFixture } from './cases.js';
import { failuresOf, runLoad, sleep, type LoadSpec } from './processes.js';
import type { ProbeLine } from './soak-probe.js';

/** The load beside the measured one: four connections, as many as the issue measured the tail with. */
export const BESIDE_CONNECTIONS = 4;
export const TAIL_CONNECTIONS = [1, 50] as const;

export type TailScenarioName = 'check alone' | 'check beside reads' | 'check beside issuance' | 'issue alone';

export interface TailScenario {
  name: TailScenarioName;
  measured: Omit<LoadSpec, 'tokensFile'>;
  /** The load running beside the measured one, if any. */
  beside?: Omit<LoadSpec, 'tokensFile'>;
}

/** One server: its scenarios, and where its event-loop probe writes (none for a server without one). */
export interface TailTarget {
  target: string;
  pid: number;
  probeFile?: string;
  scenarios: TailScenario[];
}

export interface TailMeasurement {
  target: string;
  scenario: TailScenarioName;
  connections: number;
  latencyUs: { p50: number; p99: number; p999: number; max: number };
  requestsPerSecond: number;
  besideRequestsPerSecond?: number;
  /** The event loop's delay over the same seconds (ms beyond the probe's 1 ms timer). */
  eventLoopMs?: { p99: number; max: number };
  failures: number;
}

const loadOf = (cases: BenchCase[], suffix: string) => {
  const found = cases.find((c) => c.name.endsWith(suffix));
  if (found === undefined) throw new Error(`no bench case ending in "${suffix}"`);
  return found.load;
};

/** Tessera's scenarios: whoami with an admin token (answered from memory), and admin tokens issued (a write each). */
export function tesseraTailScenarios(fixture: TesseraFixture): TailScenario[] {
  const cases = tesseraCases(fixture);
  const whoami = loadOf(cases, 'whoami, admin Bearer');
  const issue = loadOf(cases, 'admin token');
  return [
    { name: 'check alone', measured: whoami },
    { name: 'check beside reads', measured: whoami, beside: whoami },
    { name: 'check beside issuance', measured: whoami, beside: issue },
    { name: 'issue alone', measured: issue },
  ];
}

/** The ceiling's: its Map lookup and its token request, alone. */
export function ceilingTailScenarios(cases: BenchCase[]): TailScenario[] {
  return [
    { name: 'check alone', measured: cases.find((c) => c.kind === 'check')!.load },
    { name: 'issue alone', measured: cases.find((c) => c.kind === 'issue')!.load },
  ];
}

/** Each target's scenarios at 1 and 50 connections (or `connectionCounts`), `seconds` each, one after the other. */
export async function measureTail(
  targets: TailTarget[],
  seconds: number,
  log: (line: string) => void,
  connectionCounts: readonly number[] = TAIL_CONNECTIONS,
): Promise<TailMeasurement[]> {
  const measurements: TailMeasurement[] = [];
  for (const target of targets) {
    for (const connections of connectionCounts) {
      for (const scenario of target.scenarios) {
        const probe = target.probeFile === undefined ? undefined : await probeMark(target.pid, target.probeFile);
        const [measured, beside] = await Promise.all([
          runLoad(scenario.measured, connections, seconds, true),
          scenario.beside === undefined ? undefined : runLoad(scenario.beside, BESIDE_CONNECTIONS, seconds),
        ]);
        const eventLoop = probe === undefined ? undefined : await probe();
        const measurement: TailMeasurement = {
          target: target.target,
          scenario: scenario.name,
          connections,
          latencyUs: {
            p50: measured.latencyUs.p50,
            p99: measured.latencyUs.p99,
            p999: measured.latencyUs.p999,
            max: measured.latencyUs.max,
          },
          requestsPerSecond: measured.requestsPerSecond,
          ...(beside === undefined ? {} : { besideRequestsPerSecond: beside.requestsPerSecond }),
          ...(eventLoop === undefined ? {} : { eventLoopMs: { p99: eventLoop.eventLoopDelayMs.p99, max: eventLoop.eventLoopDelayMs.max } }),
          failures: failuresOf(measured) + (beside === undefined ? 0 : failuresOf(beside)),
        };
        measurements.push(measurement);
        log(`  ${describe(measurement)}`);
      }
    }
  }
  return measurements;
}

/**
 * Resets the server's event-loop histogram (a SIGUSR2 makes the probe write a line and start over)
 * and returns the function that ends the interval and reads its line.
 */
async function probeMark(pid: number, file: string): Promise<() => Promise<ProbeLine>> {
  const linesOf = () => {
    try {
      return readFileSync(file, 'utf8').split('\n').filter(Boolean);
    } catch {
      return [];
    }
  };
  const waitForLine = async (count: number) => {
    for (let tries = 0; tries < 200; tries++) {
      const lines = linesOf();
      if (lines.length > count) return JSON.parse(lines[lines.length - 1]!) as ProbeLine;
      await sleep(10);
    }
    throw new Error(`the event-loop probe of process ${pid} wrote nothing to ${file}`);
  };
  const before = linesOf().length + 1;
  process.kill(pid, 'SIGUSR2');
  await waitForLine(before - 1);
  return async () => {
    process.kill(pid, 'SIGUSR2');
    return waitForLine(before);
  };
}

const ms = (us: number) => (us / 1000).toFixed(2);

function describe(m: TailMeasurement): string {
  const loop =
    m.eventLoopMs === undefined ? '' : `   event loop p99 ${m.eventLoopMs.p99.toFixed(1)} max ${m.eventLoopMs.max.toFixed(1)} ms`;
  return (
    `${m.target.padEnd(17)} ${m.scenario.padEnd(22)} ${String(m.connections).padStart(2)} conn: ` +
    `p50 ${ms(m.latencyUs.p50)}  p99 ${ms(m.latencyUs.p99)}  p99.9 ${ms(m.latencyUs.p999)} ms  ${Math.round(m.requestsPerSecond)} req/s${loop}` +
    (m.failures > 0 ? `   FAILED REQUESTS: ${m.failures}` : '')
  );
}

/** The ceiling's measurement of the same kind of request at the same number of connections. */
function ceilingOf(measurements: TailMeasurement[], m: TailMeasurement, ceiling: string): TailMeasurement | undefined {
  const kind = m.scenario === 'issue alone' ? 'issue alone' : 'check alone';
  return measurements.find((c) => c.target === ceiling && c.scenario === kind && c.connections === m.connections);
}

/** A Markdown table: latencies in ms, with p99 and p99.9 as ratios to the ceiling's. */
export function tailTable(measurements: TailMeasurement[], ceiling: string): string {
  const header = [
    'target',
    'scenario',
    'conn',
    'p50 ms',
    'p99 ms',
    'p99.9 ms',
    'p99 × ceiling',
    'p99.9 × ceiling',
    'req/s',
    'event loop p99 / max ms',
  ];
  const rows = measurements.map((m) => {
    const c = m.target === ceiling ? undefined : ceilingOf(measurements, m, ceiling);
    const ratio = (value: number, of: number | undefined) => (of === undefined ? '' : (value / of).toFixed(2));
    return [
      m.target,
      m.scenario + (m.besideRequestsPerSecond === undefined ? '' : ` (${Math.round(m.besideRequestsPerSecond)} req/s beside)`),
      String(m.connections),
      ms(m.latencyUs.p50),
      ms(m.latencyUs.p99),
      ms(m.latencyUs.p999),
      ratio(m.latencyUs.p99, c?.latencyUs.p99),
      ratio(m.latencyUs.p999, c?.latencyUs.p999),
      String(Math.round(m.requestsPerSecond)),
      m.eventLoopMs === undefined ? '' : `${m.eventLoopMs.p99.toFixed(1)} / ${m.eventLoopMs.max.toFixed(1)}`,
    ];
  });
  return [header, header.map(() => '---'), ...rows].map((row) => `| ${row.join(' | ')} |`).join('\n');
}

/** The issue's goals for the tail, for every Tessera target measured. */
export function tailChecks(measurements: TailMeasurement[], ceiling: string): TargetCheck[] {
  const checks: TargetCheck[] = [];
  const find = (target: string, scenario: TailScenarioName, connections: number) =>
    measurements.find((m) => m.target === target && m.scenario === scenario && m.connections === connections);
  const ratio = (value: number) => `${value.toFixed(2)}×`;
  for (const target of [...new Set(measurements.map((m) => m.target))].filter((t) => t !== ceiling)) {
    for (const connections of TAIL_CONNECTIONS) {
      const besideIssuance = find(target, 'check beside issuance', connections);
      const besideReads = find(target, 'check beside reads', connections);
      if (besideIssuance !== undefined && besideReads !== undefined) {
        const value = besideIssuance.latencyUs.p99 / besideReads.latencyUs.p99;
        checks.push({
          description: `${target}: whoami p99 beside issuance ≤ 1.5 × beside reads (${connections} conn)`,
          value: `${ratio(value)} (${ms(besideIssuance.latencyUs.p99)} against ${ms(besideReads.latencyUs.p99)} ms)`,
          met: value <= 1.5,
        });
      }
    }
    const issue = find(target, 'issue alone', 1);
    const check = find(target, 'check alone', 1);
    if (issue !== undefined && check !== undefined) {
      const value = issue.latencyUs.p99 / check.latencyUs.p99;
      checks.push({
        description: `${target}: issuance p99 ≤ 3 × whoami p99 alone (1 conn)`,
        value: `${ratio(value)} (${ms(issue.latencyUs.p99)} against ${ms(check.latencyUs.p99)} ms)`,
        met: value <= 3,
      });
      const ceilingIssue = find(ceiling, 'issue alone', 1);
      if (ceilingIssue !== undefined) {
        const roundTrip = issue.latencyUs.p50 / ceilingIssue.latencyUs.p50;
        checks.push({
          description: `${target}: issuance round trip ≤ 1.5 × ceiling's (1 conn, p50)`,
          value: `${ratio(roundTrip)} (${ms(issue.latencyUs.p50)} against ${ms(ceilingIssue.latencyUs.p50)} ms)`,
          met: roundTrip <= 1.5,
        });
      }
    }
  }
  return checks;
}
