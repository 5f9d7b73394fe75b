/**
 * `npm run bench:cpu -- [--cases a,b] [--runs N] [--seconds S] [--connections C]`: the server's CPU
 * time per request (user + system, from /proc/PID/stat) for each case, over N runs of S seconds at C
 * connections on one `tessera serve` (SQLite, pinned to one core). Prints the minimum and median
 * of the runs: the machine's noise only ever adds time, so the minimum is the figure to compare
 * before and after a change. Cases: `CASE_NAMES` of `single-server.ts`.
 *
 * `--metrics off|on|alternate` (default off): the server without or with Prometheus metrics
 * (METRICS_PORT=0); `alternate` runs two servers, one of each, and alternates their runs, so that
 * the machine's drift falls on both alike: the cost of the metrics is the difference.
 */
import { readFileSync } from 'node:fs';
import { failuresOf, runLoad } from './processes.js';
import { CASE_NAMES, startSingleServer, type SingleServer } from './single-server.js';

const argv = process.argv.slice(2);
const option = (flag: string, fallback: string) => {
  const index = argv.indexOf(flag);
  return index >= 0 && argv[index + 1] !== undefined ? argv[index + 1]! : fallback;
};
const chosen = option('--cases', CASE_NAMES.join(',')).split(',');
const runs = Number(option('--runs', '4'));
const seconds = Number(option('--seconds', '3'));
const connections = Number(option('--connections', '50'));
const metricsMode = option('--metrics', 'off');
if (!['off', 'on', 'alternate'].includes(metricsMode)) throw new Error('--metrics is off, on or alternate');
for (const name of chosen) {
  if (!(CASE_NAMES as readonly string[]).includes(name)) throw new Error(`cases are ${CASE_NAMES.join(', ')}`);
}

/** Clock ticks per second of /proc/PID/stat's times: 100 on every Linux this runs on. */
const TICKS_PER_SECOND = 100;

function cpuTicks(pid: number): number {
  // The fields after the command name (which may hold spaces), from the third on: utime is the 14th.
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]);
}

/** The servers measured, each with its label in the results (`admin`, `admin+metrics`). */
const servers: { suffix: string; single: SingleServer }[] = [];
try {
  if (metricsMode !== 'on') servers.push({ suffix: '', single: await startSingleServer(undefined, { METRICS_PORT: '' }) });
  if (metricsMode !== 'off') servers.push({ suffix: '+metrics', single: await startSingleServer(undefined, { METRICS_PORT: '0' }) });
} catch (error) {
  await Promise.all(servers.map(({ single }) => single.stop()));
  throw error;
}
const results: Record<string, { minUs: number; medianUs: number; runsUs: number[]; requestsPerSecond: number }> = {};
try {
  for (const name of chosen) {
    const measured = servers.map(({ suffix, single }) => ({ label: `${name}${suffix}`, single, perRequest: [] as number[], rate: 0 }));
    for (const { single } of measured) await runLoad(single.cases.get(name)!.load, connections, 1);
    for (let run = 0; run < runs; run++) {
      for (const server of measured) {
        const pid = server.single.server.child.pid!;
        const before = cpuTicks(pid);
        const result = await runLoad(server.single.cases.get(name)!.load, connections, seconds);
        const ticks = cpuTicks(pid) - before;
        if (failuresOf(result) > 0) throw new Error(`${server.label}: ${JSON.stringify(result.errors)}`);
        server.perRequest.push((ticks / TICKS_PER_SECOND / result.requests) * 1e6);
        server.rate = Math.max(server.rate, result.requestsPerSecond);
      }
    }
    for (const { label, perRequest, rate } of measured) {
      const sorted = [...perRequest].sort((a, b) => a - b);
      const round = (us: number) => Math.round(us * 10) / 10;
      results[label] = {
        minUs: round(sorted[0]!),
        medianUs: round(sorted[Math.floor((sorted.length - 1) / 2)]!),
        runsUs: perRequest.map(round),
        requestsPerSecond: Math.round(rate),
      };
      process.stderr.write(
        `${label.padEnd(26)} min ${results[label].minUs} µs  median ${results[label].medianUs} µs  (${results[label].runsUs.join(', ')})\n`,
      );
    }
  }
} finally {
  await Promise.all(servers.map(({ single }) => single.stop()));
}
console.log(JSON.stringify({ connections, seconds, runs, metrics: metricsMode, results }));
