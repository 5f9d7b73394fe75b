/**
 * `npm run bench:heavy-reads -- [--stores sqlite,postgres] [--seconds S] [--loops N]`: how much one
 * tenant's reads of its own audit log slow another tenant's token checks (issue 36, findings 4 and
 * 5). One `tessera serve` (pinned to the server core) over a store where app A keeps 110,000 events
 * (the default caps) and 30 days of counts; app B is quiet. Measured: B's whoami, one request at a
 * time, alone, then while N loops send A's filtered reads (a client address no event has: the read
 * that examines the most), then while N loops poll A's 30-day chart (`events/counts?per=day`).
 * Prints the latencies of B's whoami (p50, p90, p99) and how many of A's reads were answered.
 * PostgreSQL from BENCH_POSTGRES_URL or postgres@127.0.0.1:5432.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { OPERATOR } from '../src/request-context.js';
import { openStore } from '../src/store/open.js';
import { createTessera } from '../src/tessera.js';
import { LOAD_CORE, startPinnedServer } from './processes.js';

const DIST = fileURLToPath(new URL('../', import.meta.url));
const argv = process.argv.slice(2);
const option = (flag: string, fallback: string) => {
  const index = argv.indexOf(flag);
  return index >= 0 && argv[index + 1] !== undefined ? argv[index + 1]! : fallback;
};
const stores = option('--stores', 'sqlite,postgres').split(',');
const seconds = Number(option('--seconds', '5'));
const loops = Number(option('--loops', '8'));

const EVENTS = 110_000;
const DAY = 86_400_000;
const MINUTE = 60_000;

interface Phase {
  name: string;
  whoami: { p50: number; p90: number; p99: number; count: number };
  heavyAnswered: Record<number, number>;
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

async function seed(databaseUrl: string): Promise<{ busy: { appId: string; token: string }; quiet: { appId: string; token: string } }> {
  const store = await openStore(databaseUrl);
  const tessera = createTessera({ store });
  try {
    const busy = await tessera.apps.create('Busy');
    const quiet = await tessera.apps.create('Quiet');
    const reader = await tessera.credentials.create(busy.appId, { name: 'Events reader', scopes: ['events:read'] }, OPERATOR);
    const now = Date.now();
    for (let start = 0; start < EVENTS; start += 5_000) {
      await store.events.append(
        Array.from({ length: 5_000 }, (_, i) => ({
          type: 'token.issued' as const,
          appId: busy.appId,
          at: now - (EVENTS - start - i) * 20,
          principal: 'admin' as const,
          clientAddress: '203.0.113.7',
          details: { expiresAt: null },
        })),
      );
    }
    const kinds = [
      ['token.issued', 'admin', null],
      ['token.issued', 'anonymous', null],
      ['token.refused', null, 'invalid_token'],
      ['token.refused', 'admin', 'invalid_client'],
      ['token.throttled', 'admin', 'address'],
    ] as const;
    let counts = [];
    for (let minute = now - 30 * DAY; minute < now; minute += MINUTE) {
      const bucket = minute - (minute % MINUTE);
      for (const [type, principal, reason] of kinds) counts.push({ appId: busy.appId, bucket, type, principal, reason, count: 3 });
      if (counts.length >= 5_000) {
        await store.events.addCounts(counts);
        counts = [];
      }
    }
    await store.events.addCounts(counts);
    return {
      busy: { appId: busy.appId, token: await tokenOf(tessera, busy.appId, reader.clientId, reader.clientSecret) },
      quiet: { appId: quiet.appId, token: await tokenOf(tessera, quiet.appId, quiet.clientId, quiet.clientSecret) },
    };
  } finally {
    await tessera.close();
  }
}

async function tokenOf(tessera: ReturnType<typeof createTessera>, appId: string, clientId: string, clientSecret: string): Promise<string> {
  const app = await tessera.appCache.require(appId);
  const issued = await tessera.issuer.issue(
    app,
    { credentials: { clientId, clientSecret }, expiresAt: null },
    { clientAddress: null, by: null },
  );
  return issued.accessToken;
}

async function measure(
  url: string,
  seeded: Awaited<ReturnType<typeof seed>>,
  heavy: ((signal: AbortSignal) => Promise<number>) | undefined,
  name: string,
): Promise<Phase> {
  const controller = new AbortController();
  const answered: Record<number, number> = {};
  const heavyLoops =
    heavy === undefined
      ? []
      : Array.from({ length: loops }, async () => {
          while (!controller.signal.aborted) {
            const status = await heavy(controller.signal).catch(() => 0);
            answered[status] = (answered[status] ?? 0) + 1;
          }
        });
  const latencies: number[] = [];
  const whoami = `${url}/api/apps/${seeded.quiet.appId}/whoami`;
  const deadline = performance.now() + seconds * 1000;
  while (performance.now() < deadline) {
    const started = performance.now();
    const response = await fetch(whoami, { headers: { authorization: `Bearer ${seeded.quiet.token}` } });
    await response.arrayBuffer();
    latencies.push(performance.now() - started);
  }
  controller.abort();
  await Promise.all(heavyLoops);
  latencies.sort((a, b) => a - b);
  const round = (ms: number) => Math.round(ms * 100) / 100;
  return {
    name,
    whoami: {
      p50: round(percentile(latencies, 50)),
      p90: round(percentile(latencies, 90)),
      p99: round(percentile(latencies, 99)),
      count: latencies.length,
    },
    heavyAnswered: answered,
  };
}

async function run(backend: string, work: string): Promise<Phase[]> {
  let databaseUrl = `sqlite:${join(work, `${backend}.db`)}`;
  let drop = async () => {};
  if (backend === 'postgres') {
    const adminUrl = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
    const name = `tessera_heavy_reads_${process.pid}`;
    const admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${name}`);
    await admin.end();
    const url = new URL(adminUrl);
    url.pathname = `/${name}`;
    databaseUrl = url.toString();
    drop = async () => {
      const client = new pg.Client({ connectionString: adminUrl });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await client.end();
    };
  }
  try {
    const seeded = await seed(databaseUrl);
    const server = await startPinnedServer('tessera', join(DIST, 'src', 'cli', 'main.js'), ['serve'], {
      DATABASE_URL: databaseUrl,
      PORT: '0',
      RATE_LIMITS: 'off',
      DEMO_APP: 'off',
      LOG_LEVEL: 'info',
    });
    try {
      const busyUrl = `${server.url}/api/apps/${seeded.busy.appId}`;
      const get = async (path: string, signal: AbortSignal) => {
        const response = await fetch(`${busyUrl}${path}`, { headers: { authorization: `Bearer ${seeded.busy.token}` }, signal });
        await response.arrayBuffer();
        return response.status;
      };
      return [
        await measure(server.url, seeded, undefined, 'alone'),
        await measure(
          server.url,
          seeded,
          (signal) => get('/events?clientAddress=198.51.100.99&limit=50', signal),
          `beside ${loops} loops of filtered reads`,
        ),
        await measure(server.url, seeded, (signal) => get('/events/counts?per=day', signal), `beside ${loops} loops of 30-day charts`),
      ];
    } finally {
      await server.stop();
    }
  } finally {
    await drop();
  }
}

// This script sends the load: keep it off the server's core.
spawnSync('taskset', ['-pc', String(LOAD_CORE), String(process.pid)], { stdio: 'ignore' });
const work = mkdtempSync(join(tmpdir(), 'tessera-heavy-reads-'));
const results: Record<string, Phase[]> = {};
try {
  for (const backend of stores) {
    results[backend] = await run(backend, work);
    for (const phase of results[backend]) {
      process.stderr.write(
        `${backend} ${phase.name}: whoami of another app p50 ${phase.whoami.p50} ms, p90 ${phase.whoami.p90} ms, p99 ${phase.whoami.p99} ms` +
          ` (${phase.whoami.count} requests); the heavy reads answered ${JSON.stringify(phase.heavyAnswered)}\n`,
      );
    }
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
console.log(JSON.stringify({ seconds, loops, results }));
