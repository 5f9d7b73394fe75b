/**
 * `npm run bench:cpu -- [--cases a,b] [--runs N] [--seconds S] [--connections C]`: the server's CPU
 * time per request (user + system, from /proc/PID/stat) for each case, over N runs of S seconds at C
 * connections on one `tessera serve` (SQLite, pinned to one core). Prints the minimum and median
 * of the runs: the machine's noise only ever adds time, so the minimum is the figure to compare
 * before and after a change. Cases: `CASE_NAMES` of `single-server.ts`.
 */
import { readFileSync } from 'node:fs';
import { failuresOf, runLoad } from './processes.js';
import { CASE_NAMES, startSingleServer } from './single-server.js';

const argv = process.argv.slice(2);
const option = (flag: string, fallback: string) => {
  const index = argv.indexOf(flag);
  return index >= 0 && argv[index + 1] !== undefined ? argv[index + 1]! : fallback;
};
const chosen = option('--cases', CASE_NAMES.join(',')).split(',');
const runs = Number(option('--runs', '4'));
const seconds = Number(option('--seconds', '3'));
const connections = Number(option('--connections', '50'));
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

const single = await startSingleServer();
const pid = single.server.child.pid!;
const results: Record<string, { minUs: number; medianUs: number; runsUs: number[]; requestsPerSecond: number }> = {};
try {
  for (const name of chosen) {
    const benchCase = single.cases.get(name)!;
    await runLoad(benchCase.load, connections, 1);
    const perRequest: number[] = [];
    let rate = 0;
    for (let run = 0; run < runs; run++) {
      const before = cpuTicks(pid);
      const result = await runLoad(benchCase.load, connections, seconds);
      const ticks = cpuTicks(pid) - before;
      if (failuresOf(result) > 0) throw new Error(`${name}: ${JSON.stringify(result.errors)}`);
      perRequest.push((ticks / TICKS_PER_SECOND / result.requests) * 1e6);
      rate = Math.max(rate, result.requestsPerSecond);
    }
    const sorted = [...perRequest].sort((a, b) => a - b);
    const round = (us: number) => Math.round(us * 10) / 10;
    results[name] = {
      minUs: round(sorted[0]!),
      medianUs: round(sorted[Math.floor((sorted.length - 1) / 2)]!),
      runsUs: perRequest.map(round),
      requestsPerSecond: Math.round(rate),
    };
    process.stderr.write(`${name.padEnd(18)} min ${results[name].minUs} µs  median ${results[name].medianUs} µs  (${results[name].runsUs.join(', ')})\n`);
  }
} finally {
  await single.stop();
}
console.log(JSON.stringify({ connections, seconds, runs, results }));
