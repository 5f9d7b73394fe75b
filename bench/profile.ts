/**
 * `npm run bench:profile -- [case]`: runs Tessera on SQLite under `node --cpu-prof` with one case
 * at 50 connections for 5 s, then prints the top frames by self time. Cases: admin, anonymous,
 * whoami-anonymous, whoami-admin, whoami-basic.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openSqliteStore } from '../src/store/sqlite/store.js';
import { createTessera } from '../src/tessera.js';
import { tesseraCases } from './cases.js';
import { runLoad, startPinnedServer } from './processes.js';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}

const caseNames = ['admin', 'anonymous', 'whoami-anonymous', 'whoami-admin', 'whoami-basic'];
const chosen = process.argv[2] ?? 'whoami-anonymous';
const index = caseNames.indexOf(chosen);
if (index < 0) throw new Error(`case must be one of ${caseNames.join(', ')}`);

const DIST = fileURLToPath(new URL('../', import.meta.url));
const work = mkdtempSync(join(tmpdir(), 'tessera-profile-'));
const path = join(work, 'tessera.db');
const store = openSqliteStore(path);
const app = await createTessera({ store }).apps.create('Profile app');
await store.close();

const server = await startPinnedServer('tessera', join(DIST, 'src', 'cli', 'main.js'), ['serve'], {
  DATABASE_URL: `sqlite:${path}`,
  PORT: '0',
  RATE_LIMITS: 'off',
  DEMO_APP: 'off',
  LOG_LEVEL: 'info',
}, ['--cpu-prof', `--cpu-prof-dir=${work}`]);
const token = async (clientId: string, clientSecret: string) => {
  const response = await fetch(`${server.url}/api/apps/${app.appId}/oauth2/token`, {
    method: 'POST',
    headers: { authorization: `Basic ${Buffer.from(`${app.appId}:x`).toString('base64')}`, 'content-type': 'application/json' },
    body: JSON.stringify({ grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret }),
  });
  return ((await response.json()) as { access_token: string }).access_token;
};
const cases = tesseraCases({
  target: 'tessera/sqlite',
  url: server.url,
  appId: app.appId,
  appKey: app.appKey,
  clientId: app.clientId,
  clientSecret: app.clientSecret,
  adminToken: await token(app.clientId, app.clientSecret),
  anonymousToken: await token(app.appId, app.appKey),
});
const benchCase = cases[index]!;
await runLoad(benchCase.load, 50, 2);
const result = await runLoad(benchCase.load, 50, 5);
await server.stop();

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
console.log('\ninclusive time of this service\'s code and its libraries (top 30)');
for (const [frame, hits] of [...inclusiveHits]
  .filter(([frame]) => frame.includes('dist/src') || /fastify|pino|libsql|find-my-way|avvio|light-my-request/.test(frame))
  .sort((a, b) => b[1] - a[1])
  .slice(0, 30)) {
  console.log(`${((hits / total) * 100).toFixed(1).padStart(8)} %  ${frame}`);
}
rmSync(work, { recursive: true, force: true });
