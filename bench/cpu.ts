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
 *
 * `--tracing off|alternate` (default off): `alternate` adds two servers with OpenTelemetry on,
 * exporting OTLP (http/protobuf, the default) to a receiver in this process that drops what it
 * gets: one sampling 1 % of requests (`+trace1%`, parentbased_traceidratio 0.01), one every request
 * (`+trace100%`). The requests carry no `traceparent`: the server decides, as for a client's.
 *
 * `--warmup S` (default 1): seconds of load on each server before its runs, for each case.
 *
 * `--paired`: the servers' runs at the same time (one load each, the servers sharing their core)
 * rather than one after the other, and each server's CPU per request divided by the first's, run
 * by run: whatever else the machine does then falls on all of them in the same seconds, and the
 * median ratio is the figure to read (docs/benchmarks.md, "Tracing"). `--control` adds a second
 * server like the first (`+control`), whose ratio shows what the method itself makes of no change.
 *
 * `--jwt-algorithm EdDSA|ES256|both` (default EdDSA): the key that signs the JWT access tokens of
 * the cases `JWT_CASE_NAMES` (`admin-jwt`, `anonymous-jwt`, `whoami-admin-jwt`,
 * `whoami-anonymous-jwt`). `ES256` gives every server an ES256 key (`+ES256` in the labels); `both`
 * adds a server with one (`+ES256`) beside the others, which runs the JWT cases only.
 */
import { readFileSync } from 'node:fs';
import { startOtlpReceiver } from './otlp-receiver.js';
import { failuresOf, runLoad } from './processes.js';
import { CASE_NAMES, JWT_CASE_NAMES, startSingleServer, type SingleServer, type SingleServerOptions } from './single-server.js';

const argv = process.argv.slice(2);
const option = (flag: string, fallback: string) => {
  const index = argv.indexOf(flag);
  return index >= 0 && argv[index + 1] !== undefined ? argv[index + 1]! : fallback;
};
const chosen = option('--cases', CASE_NAMES.join(',')).split(',');
const runs = Number(option('--runs', '4'));
const seconds = Number(option('--seconds', '3'));
const connections = Number(option('--connections', '50'));
const warmupSeconds = Number(option('--warmup', '1'));
const metricsMode = option('--metrics', 'off');
if (!['off', 'on', 'alternate'].includes(metricsMode)) throw new Error('--metrics is off, on or alternate');
const paired = argv.includes('--paired');
const control = argv.includes('--control');
const tracingMode = option('--tracing', 'off');
if (!['off', 'alternate'].includes(tracingMode)) throw new Error('--tracing is off or alternate');
const jwtAlgorithm = option('--jwt-algorithm', 'EdDSA');
if (!['EdDSA', 'ES256', 'both'].includes(jwtAlgorithm)) throw new Error('--jwt-algorithm is EdDSA, ES256 or both');
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

/** The servers measured, each with its label in the results (`admin`, `admin+metrics`); `jwtOnly`: for the JWT cases only. */
const servers: { suffix: string; single: SingleServer; jwtOnly?: boolean }[] = [];
const collector = await startOtlpReceiver();
/** Every server's key (`--jwt-algorithm`), and the suffix that says it. */
const keyed: SingleServerOptions = { jwtAlgorithm: jwtAlgorithm === 'ES256' ? 'ES256' : 'EdDSA' };
const keySuffix = jwtAlgorithm === 'ES256' ? '+ES256' : '';
try {
  if (metricsMode !== 'on') servers.push({ suffix: keySuffix, single: await startSingleServer(undefined, { METRICS_PORT: '' }, keyed) });
  if (control) servers.push({ suffix: `+control${keySuffix}`, single: await startSingleServer(undefined, { METRICS_PORT: '' }, keyed) });
  if (metricsMode !== 'off')
    servers.push({ suffix: `+metrics${keySuffix}`, single: await startSingleServer(undefined, { METRICS_PORT: '0' }, keyed) });
  if (tracingMode === 'alternate') {
    servers.push({
      suffix: `+trace1%${keySuffix}`,
      single: await startSingleServer(undefined, { METRICS_PORT: '', ...collector.tracingEnv('0.01') }, keyed),
    });
    servers.push({
      suffix: `+trace100%${keySuffix}`,
      single: await startSingleServer(undefined, { METRICS_PORT: '', ...collector.tracingEnv('1') }, keyed),
    });
  }
  if (jwtAlgorithm === 'both') {
    servers.push({
      suffix: '+ES256',
      single: await startSingleServer(undefined, { METRICS_PORT: '' }, { jwtAlgorithm: 'ES256' }),
      jwtOnly: true,
    });
  }
} catch (error) {
  await Promise.all(servers.map(({ single }) => single.stop()));
  collector.close();
  throw error;
}
const results: Record<
  string,
  { minUs: number; medianUs: number; runsUs: number[]; requestsPerSecond: number; medianRatioToFirst?: number; ratiosToFirst?: number[] }
> = {};
try {
  for (const name of chosen) {
    const measured = servers
      .filter(({ jwtOnly }) => jwtOnly !== true || (JWT_CASE_NAMES as readonly string[]).includes(name))
      .map(({ suffix, single }) => ({ label: `${name}${suffix}`, single, perRequest: [] as number[], rate: 0 }));
    // Side by side when paired, as the runs are: code that only the traced requests run takes
    // thousands of them before V8 has optimised it.
    if (paired) await Promise.all(measured.map(({ single }) => runLoad(single.cases.get(name)!.load, connections, warmupSeconds)));
    else for (const { single } of measured) await runLoad(single.cases.get(name)!.load, connections, warmupSeconds);
    for (let run = 0; run < runs; run++) {
      if (paired) {
        const before = measured.map((server) => cpuTicks(server.single.server.child.pid!));
        const loads = await Promise.all(measured.map((server) => runLoad(server.single.cases.get(name)!.load, connections, seconds)));
        measured.forEach((server, index) => {
          const result = loads[index]!;
          if (failuresOf(result) > 0) throw new Error(`${server.label}: ${JSON.stringify(result.errors)}`);
          const ticks = cpuTicks(server.single.server.child.pid!) - before[index]!;
          server.perRequest.push((ticks / TICKS_PER_SECOND / result.requests) * 1e6);
          server.rate = Math.max(server.rate, result.requestsPerSecond);
        });
        continue;
      }
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
      const first = measured[0]!.perRequest;
      const ratios = paired && perRequest !== first ? perRequest.map((us, run) => us / first[run]!).sort((a, b) => a - b) : undefined;
      const median = (values: number[]) => values[Math.floor((values.length - 1) / 2)]!;
      const thousandths = (ratio: number) => Math.round(ratio * 1000) / 1000;
      results[label] = {
        minUs: round(sorted[0]!),
        medianUs: round(median(sorted)),
        runsUs: perRequest.map(round),
        requestsPerSecond: Math.round(rate),
        ...(ratios === undefined ? {} : { medianRatioToFirst: thousandths(median(ratios)), ratiosToFirst: ratios.map(thousandths) }),
      };
      const result = results[label];
      process.stderr.write(
        `${label.padEnd(26)} min ${result.minUs} µs  median ${result.medianUs} µs  (${result.runsUs.join(', ')})  ${result.requestsPerSecond} req/s` +
          (ratios === undefined ? '' : `  ×${result.medianRatioToFirst} of the first (${result.ratiosToFirst!.join(', ')})`) +
          '\n',
      );
    }
  }
} finally {
  await Promise.all(servers.map(({ single }) => single.stop()));
  collector.close();
}
console.log(
  JSON.stringify({
    connections,
    seconds,
    runs,
    paired,
    metrics: metricsMode,
    tracing: tracingMode,
    // Said only when not the default (EdDSA), so that the output of the runs before the JWT cases keeps its shape.
    ...(jwtAlgorithm === 'EdDSA' ? {} : { jwtAlgorithm }),
    results,
  }),
);
