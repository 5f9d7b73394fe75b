/**
 * `npm run bench:tracing-floor -- [--runs N] [--seconds S]`: what OpenTelemetry's Node SDK costs a
 * process, with none of Tessera (issue 37, docs/benchmarks.md "Tracing and request ids"). Four bare
 * `node:http` servers answering a short JSON, side by side on the server core, each under its own
 * wrk: without OpenTelemetry, the same again (the control), with the SDK started and no span, and
 * with the SDK making a span for 1 request in 100 (the request's work in its context). The CPU per
 * request of each, over the same seconds, divided by the first's: the median of the runs.
 */
import { createServer } from 'node:http';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { argv } from 'node:process';
import { runLoad, sleep, startPinnedServer, type RunningServer } from './processes.js';

const MODES = ['off', 'control', 'sdk', 'span-1%'] as const;
type Mode = (typeof MODES)[number];

const option = (name: string, fallback: string) => {
  const index = argv.indexOf(name);
  return index >= 0 && argv[index + 1] !== undefined ? argv[index + 1]! : fallback;
};

async function serve(mode: Mode): Promise<void> {
  let traced: ((answer: () => void) => void) | undefined;
  if (mode === 'sdk' || mode === 'span-1%') {
    const { NodeSDK, tracing } = await import('@opentelemetry/sdk-node');
    const api = await import('@opentelemetry/api');
    // As Tessera starts it (src/tracing/sdk.ts), exporting to memory: nothing leaves the process.
    new NodeSDK({
      sampler: new tracing.AlwaysOnSampler(),
      traceExporter: new tracing.InMemorySpanExporter(),
      instrumentations: [],
      metricReaders: [],
      logRecordProcessors: [],
    }).start();
    const tracer = api.trace.getTracer('tracing-floor');
    if (mode === 'span-1%')
      traced = (answer) => {
        const span = tracer.startSpan('GET /');
        api.context.with(api.trace.setSpan(api.context.active(), span), answer);
        span.end();
      };
  }
  const body = JSON.stringify({ appId: 'bench', principal: 'admin', id: 'x'.repeat(20) });
  let count = 0;
  const server = createServer((_request, response) => {
    const answer = () => {
      response.setHeader('content-type', 'application/json');
      response.end(body);
    };
    if (traced !== undefined && ++count % 100 === 0) traced(answer);
    else answer();
  });
  server.listen(0, '127.0.0.1', () => {
    const address = server.address() as { port: number };
    console.log(JSON.stringify({ url: `http://127.0.0.1:${address.port}` }));
  });
}

function cpuTicks(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]);
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

async function measure(): Promise<void> {
  const runs = Number(option('--runs', '6'));
  const seconds = Number(option('--seconds', '5'));
  const script = fileURLToPath(import.meta.url);
  const servers: RunningServer[] = [];
  try {
    for (const mode of MODES) servers.push(await startPinnedServer(mode, script, ['serve', mode], process.env));
    const load = (server: RunningServer, duration: number) => runLoad({ url: server.url, method: 'GET', path: '/' }, 20, duration);
    await Promise.all(servers.map((server) => load(server, 5)));
    const ratios = new Map<Mode, number[]>(MODES.map((mode) => [mode, []]));
    const perRequest = new Map<Mode, number[]>(MODES.map((mode) => [mode, []]));
    for (let run = 0; run < runs; run++) {
      const before = servers.map((server) => cpuTicks(server.child.pid!));
      const results = await Promise.all(servers.map((server) => load(server, seconds)));
      await sleep(100);
      const micros = servers.map((server, index) => ((cpuTicks(server.child.pid!) - before[index]!) * 10_000) / results[index]!.requests);
      MODES.forEach((mode, index) => {
        perRequest.get(mode)!.push(micros[index]!);
        ratios.get(mode)!.push(micros[index]! / micros[0]!);
      });
    }
    const report = Object.fromEntries(
      MODES.map((mode) => [
        mode,
        {
          medianCpuUsPerRequest: Number(median(perRequest.get(mode)!).toFixed(2)),
          medianRatio: Number(median(ratios.get(mode)!).toFixed(3)),
          ratios: ratios.get(mode)!.map((ratio) => Number(ratio.toFixed(3))),
        },
      ]),
    );
    console.log(JSON.stringify(report, null, 2));
  } finally {
    await Promise.all(servers.map((server) => server.stop()));
  }
}

if (argv[2] === 'serve') await serve(argv[3] as Mode);
else await measure();
