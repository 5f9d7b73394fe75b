/**
 * The Tessera servers a benchmark measures: each on a fresh store with one app, pinned to the server
 * core, with the tokens it needs issued.
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { openStore } from '../src/store/open.js';
import type { Store } from '../src/store/store.js';
import { createTessera } from '../src/tessera.js';
import { generateAccessToken } from 'tessera-tokens/internal/tokens/token.js';
import { mkdirSync } from 'node:fs';
import type { TesseraFixture } from './cases.js';
import { MEASURED_SERVER_ENV, startPinnedServer, type RunningServer } from './processes.js';

const DIST = fileURLToPath(new URL('../', import.meta.url));
const PROBE = fileURLToPath(new URL('./soak-probe.js', import.meta.url));
const log = (line: string) => process.stderr.write(`${line}\n`);

/** Preloads bench/soak-probe.ts into a server: its event loop's delay, written to `file` on SIGUSR2. */
export function eventLoopProbe(file: string): { nodeArgs: string[]; env: Record<string, string> } {
  return {
    nodeArgs: ['--import', PROBE],
    env: { SOAK_PROBE_FILE: file, SOAK_PROBE_INTERVAL_MS: '0', SOAK_PROBE_RESOLUTION_MS: '1' },
  };
}

export async function seedTokens(store: Store, appId: string, count: number): Promise<void> {
  for (let done = 0; done < count;) {
    const chunk = Math.min(20_000, count - done);
    await Promise.all(
      Array.from({ length: chunk }, () => {
        const issuedAt = Date.now();
        const { selector, verifierHash } = generateAccessToken(issuedAt);
        return store.tokens.insert(
          {
            selector,
            verifierHash,
            appId,
            kind: 'admin',
            issuedAt,
            expiresAt: null,
            clientId: null,
            scopes: null,
          },
          0,
        );
      }),
    );
    done += chunk;
  }
}

export async function issueToken(url: string, appId: string, clientId: string, clientSecret: string): Promise<string> {
  const response = await fetch(`${url}/api/apps/${appId}/oauth2/token`, {
    method: 'POST',
    headers: { authorization: `Basic ${Buffer.from(`${appId}:bench`).toString('base64')}`, 'content-type': 'application/json' },
    body: JSON.stringify({ grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret }),
  });
  if (response.status !== 200) throw new Error(`token request failed: ${response.status} ${await response.text()}`);
  return ((await response.json()) as { access_token: string }).access_token;
}

export interface TesseraTarget {
  server: RunningServer;
  fixture: TesseraFixture;
  databaseUrl: string;
  tokensDir: string;
  /** Where the server's event-loop probe writes (`eventLoopProbe`). */
  probeFile: string;
  /** Drops what the target created (a PostgreSQL database). */
  cleanup: () => Promise<void>;
}

/** Starts Tessera on a fresh store (`databaseUrl`) holding `baseTokens` tokens, with one app. */
export async function startTessera(
  target: string,
  databaseUrl: string,
  workDir: string,
  baseTokens: number,
  cleanup: () => Promise<void>,
): Promise<TesseraTarget> {
  const store = await openStore(databaseUrl);
  const app = await createTessera({ store }).apps.create('Benchmark app');
  await seedTokens(store, app.appId, baseTokens);
  await store.close();
  const slug = target.replace(/\W+/g, '_');
  const probeFile = join(workDir, `event-loop-${slug}.jsonl`);
  const probe = eventLoopProbe(probeFile);
  const server = await startPinnedServer(
    target,
    join(DIST, 'src', 'cli', 'main.js'),
    ['serve'],
    { ...MEASURED_SERVER_ENV, ...probe.env, DATABASE_URL: databaseUrl },
    probe.nodeArgs,
  );
  const fixture: TesseraFixture = {
    target,
    url: server.url,
    appId: app.appId,
    appKey: app.appKey,
    clientId: app.clientId,
    clientSecret: app.clientSecret,
    adminToken: await issueToken(server.url, app.appId, app.clientId, app.clientSecret),
    anonymousToken: await issueToken(server.url, app.appId, app.appId, app.appKey),
  };
  const tokensDir = join(workDir, `tokens-${slug}`);
  mkdirSync(tokensDir);
  return { server, fixture, databaseUrl, tokensDir, probeFile, cleanup };
}

/** PostgreSQL on a fresh database, when a server is reachable (BENCH_POSTGRES_URL); undefined otherwise. */
export async function startTesseraOnPostgres(workDir: string, baseTokens: number): Promise<TesseraTarget | undefined> {
  const adminUrl = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
  const name = `tessera_bench_${process.pid}`;
  const admin = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 2_000 });
  try {
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.query(`CREATE DATABASE ${name}`);
  } catch (error) {
    log(`PostgreSQL not reachable at ${adminUrl} (${(error as Error).message}): tessera/postgres is not measured`);
    await admin.end().catch(() => {});
    return undefined;
  }
  await admin.end();
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const drop = async () => {
    const client = new pg.Client({ connectionString: adminUrl });
    await client.connect();
    await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await client.end();
  };
  return startTessera('tessera/postgres', url.toString(), workDir, baseTokens, drop);
}
