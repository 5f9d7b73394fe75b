/**
 * `npm run bench:profile -- [case] [--tracing RATIO]`: runs Tessera on SQLite under `node --cpu-prof`
 * with one case at 50 connections for 5 s, then prints the top frames by self time. Cases:
 * `CASE_NAMES` of `single-server.ts`. `--tracing 0.01` traces that ratio of the requests, exported
 * over OTLP to a receiver that drops them (as `bench:cpu --tracing alternate`).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startOtlpReceiver } from './otlp-receiver.js';
import { runLoad } from './processes.js';
import { CASE_NAMES, startSingleServer } from './single-server.js';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}

const argv = process.argv.slice(2);
const tracingIndex = argv.indexOf('--tracing');
const tracingRatio = tracingIndex >= 0 ? argv.splice(tracingIndex, 2)[1] : undefined;
const chosen = argv[0] ?? 'whoami-anonymous';
if (!(CASE_NAMES as readonly string[]).includes(chosen)) throw new Error(`case must be one of ${CASE_NAMES.join(', ')}`);

const receiver = tracingRatio === undefined ? undefined : await startOtlpReceiver();
const single = await startSingleServer((work) => ['--cpu-prof', `--cpu-prof-dir=${work}`], {
  ...(receiver === undefined || tracingRatio === undefined ? {} : receiver.tracingEnv(tracingRatio)),
});
const { server, work } = single;
const benchCase = single.cases.get(chosen)!;
await runLoad(benchCase.load, 50, 2);
const result = await runLoad(benchCase.load, 50, 5);
await server.stop();
receiver?.close();

const profileFile = readdirSync(work).find((file) => file.endsWith('.cpuprofile'));
if (profileFile === undefined) throw new Error('no profile written');
const profile = JSON.parse(readFileSync(join(work, profileFile), 'utf8')) as { nodes: ProfileNode[] };
const selfHits = new Map<string, number>();
const inclusiveHits = new Map<string, number>();
let total = 0;
const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const frameOf = (node: ProfileNode) => {
  const file = node.callFrame.url.replace(/^.*node_modules\//, '').replace(/^file:\/\/.*\/dist\//, 'dist/');
  return `${node.callFrame.functionName || '(anonymous)'}  ${file}${file ? `:${node.callFrame.lineNumber + 1}` : ''}`;
};
// Inclusive time: a frame's own hits plus its callees', counted once per stack even if recursive.
const walk = (node: ProfileNode, onStack: Set<string>): number => {
  const key = frameOf(node);
  let hits = node.hitCount ?? 0;
  const entered = !onStack.has(key);
  if (entered) onStack.add(key);
  for (const child of node.children ?? []) hits += walk(byId.get(child)!, onStack);
  if (entered) {
    onStack.delete(key);
    inclusiveHits.set(key, (inclusiveHits.get(key) ?? 0) + hits);
  }
  return hits;
};
walk(profile.nodes[0]!, new Set());
for (const node of profile.nodes) {
  const hits = node.hitCount ?? 0;
  total += hits;
  const key = frameOf(node);
  selfHits.set(key, (selfHits.get(key) ?? 0) + hits);
}
console.log(`${benchCase.name}: ${Math.round(result.requestsPerSecond)} req/s at 50 connections while profiled`);
console.log('self time  frame');
for (const [frame, hits] of [...selfHits].sort((a, b) => b[1] - a[1]).slice(0, 25)) {
  console.log(`${((hits / total) * 100).toFixed(1).padStart(8)} %  ${frame}`);
}
console.log("\ninclusive time of this service's code and its libraries (top 30)");
for (const [frame, hits] of [...inclusiveHits]
  .filter(([frame]) => frame.includes('dist/src') || /fastify|pino|libsql|find-my-way|avvio|light-my-request|opentelemetry/.test(frame))
  .sort((a, b) => b[1] - a[1])
  .slice(0, 30)) {
  console.log(`${((hits / total) * 100).toFixed(1).padStart(8)} %  ${frame}`);
}
await single.stop();
