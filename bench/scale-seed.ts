/**
 * The scale benchmark's stores (bench/scale.ts): a fresh SQLite file or PostgreSQL database each,
 * filled before the server starts through the tables `tessera store copy` writes (one transaction
 * per batch of rows: 10⁶ tokens in seconds, where HTTP would take hours), and the files of requests
 * `bench/wrk/scale.lua` picks from: one line a request, "path<TAB>authorization".
 */
import { randomBytes } from 'node:crypto';
import { closeSync, openSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { DEFAULT_APP_CONFIGURATION } from 'tessera-tokens/internal/apps/app.js';
import { generateAppAccessKeys } from '../src/apps/access-keys.js';
import { clientSecretDigest } from 'tessera-tokens/internal/crypto.js';
import { Keyring } from 'tessera-tokens/internal/signing-keys/keyring.js';
import { openDump } from '../src/store/copy.js';
import { TABLES, type Row, type TableSpec, type Value } from '../src/store/dump.js';
import { parseDatabaseUrl } from 'tessera-tokens/internal/store/location.js';
import { openStore } from '../src/store/open.js';
import { signAnonymousToken } from 'tessera-tokens/internal/tokens/anonymous-token.js';
import { generateAccessToken } from 'tessera-tokens/internal/tokens/token.js';

export type Backend = 'sqlite' | 'postgres';

/** A fresh, empty store of one backend. */
export interface StoreTarget {
  backend: Backend;
  databaseUrl: string;
  /** PostgreSQL: the database's name (its backends' CPU is measured too). */
  database?: string;
  drop(): Promise<void>;
}

/** Makes fresh stores of one backend, and for PostgreSQL finds the server processes serving one. */
export interface StoreFactory {
  backend: Backend;
  create(label: string): Promise<StoreTarget>;
  /** The PIDs of the PostgreSQL backends connected to `database` (none for SQLite). */
  serverPids(target: StoreTarget): Promise<number[]>;
  close(): Promise<void>;
}

export function sqliteFactory(work: string): StoreFactory {
  return {
    backend: 'sqlite',
    async create(label) {
      const path = join(work, `${label}.db`);
      return {
        backend: 'sqlite',
        databaseUrl: `sqlite:${path}`,
        async drop() {
          for (const suffix of ['', '-wal', '-shm']) rmSync(`${path}${suffix}`, { force: true });
        },
      };
    },
    async serverPids() {
      return [];
    },
    async close() {},
  };
}

/**
 * Databases on the PostgreSQL server that `adminUrl` reaches (as a user who may create databases),
 * named after this process; or why it cannot be reached.
 */
export async function postgresFactory(adminUrl: string): Promise<StoreFactory | string> {
  const admin = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 2_000 });
  try {
    await admin.connect();
  } catch (error) {
    await admin.end().catch(() => {});
    return `PostgreSQL not reachable at ${adminUrl} (${(error as Error).message})`;
  }
  const created = new Set<string>();
  const dropDatabase = async (name: string) => {
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    created.delete(name);
  };
  return {
    backend: 'postgres',
    async create(label) {
      const name = `tessera_scale_${process.pid}_${label.replace(/\W+/g, '_')}`.toLowerCase();
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.query(`CREATE DATABASE ${name}`);
      created.add(name);
      const url = new URL(adminUrl);
      url.pathname = `/${name}`;
      return { backend: 'postgres', databaseUrl: url.toString(), database: name, drop: () => dropDatabase(name) };
    },
    async serverPids(target) {
      const result = await admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = $1', [target.database]);
      return result.rows.map((row) => row.pid);
    },
    async close() {
      for (const name of [...created]) await dropDatabase(name).catch(() => {});
      await admin.end();
    },
  };
}

/** What a store is filled with. */
export interface SeedSpec {
  apps: number;
  /** One self-verifying anonymous token per app, for `whoami` (`anonymousFile`). */
  anonymousTokens: boolean;
  /** Stored admin tokens (no expiry), spread round-robin over the first `adminApps` apps (`adminFile`). */
  adminTokens: number;
  adminApps: number;
  /** One admin-token request per app, with its ClientID and ClientSecret (`issueFile`). */
  tokenRequests?: boolean;
}

export interface SeededStore {
  target: StoreTarget;
  spec: SeedSpec;
  /** `whoami` with each app's anonymous token, one line per app. */
  anonymousFile?: string;
  /** `whoami` with each admin token, one line per token. */
  adminFile?: string;
  /** An admin-token request with each app's ClientID and ClientSecret, one line per app. */
  issueFile?: string;
  /** An app of the store (the first), for requests that need a real one. */
  someAppId: string;
  seedSeconds: number;
}

/** Rows per transaction while seeding. */
const BATCH_ROWS = 10_000;

export const whoamiPath = (appId: string) => `/api/apps/${appId}/whoami`;
const tokenPath = (appId: string) => `/api/apps/${appId}/oauth2/token`;

/** Fills an empty store as `spec` says, and writes the request files into `work` (named after `label`). */
export async function seedStore(target: StoreTarget, spec: SeedSpec, work: string, label: string): Promise<SeededStore> {
  const started = performance.now();
  const dump = await openDump(parseDatabaseUrl(target.databaseUrl), 'target');
  const appIds: string[] = [];
  const seeded: SeededStore = { target, spec, someAppId: '', seedSeconds: 0 };
  const issueOut = spec.tokenRequests === true ? openSync((seeded.issueFile = join(work, `${label}-issue.txt`)), 'w') : undefined;
  try {
    const apps = tableOf('apps');
    const createdAt = Date.now();
    const configuration = JSON.stringify(DEFAULT_APP_CONFIGURATION);
    await inBatches(spec.apps, async (from, to) => {
      const rows: Row[] = [];
      const requests: string[] = [];
      for (let index = from; index < to; index++) {
        const keys = generateAppAccessKeys();
        appIds.push(keys.appId);
        if (issueOut !== undefined) {
          const basic = Buffer.from(`${keys.clientId}:${keys.clientSecret}`).toString('base64');
          requests.push(`${tokenPath(keys.appId)}\tBasic ${basic}\tgrant_type=client_credentials\n`);
        }
        rows.push(
          rowOf(apps, {
            app_id: keys.appId,
            name: `Scale app ${index}`,
            app_key: keys.appKey,
            client_id: keys.clientId,
            client_secret_hash: clientSecretDigest(keys.clientSecret),
            admin_id: keys.adminId,
            created_at: createdAt,
            configuration,
          }),
        );
      }
      await dump.write(apps, rows);
      if (issueOut !== undefined) writeSync(issueOut, requests.join(''));
    });
    seeded.someAppId = appIds[0]!;

    if (spec.adminTokens > 0) {
      const tokens = tableOf('tokens');
      const adminApps = Math.max(1, Math.min(spec.adminApps, appIds.length));
      const file = join(work, `${label}-admin.txt`);
      const out = openSync(file, 'w');
      try {
        await inBatches(spec.adminTokens, async (from, to) => {
          const rows: Row[] = [];
          const lines: string[] = [];
          const issuedAt = Date.now();
          for (let index = from; index < to; index++) {
            const appId = appIds[index % adminApps]!;
            const { token, selector, verifierHash } = generateAccessToken(issuedAt);
            rows.push(
              rowOf(tokens, {
                selector: Buffer.from(selector),
                verifier_hash: verifierHash,
                app_id: appId,
                kind: 'admin',
                issued_at: issuedAt,
                expires_at: null,
              }),
            );
            lines.push(`${whoamiPath(appId)}\tBearer ${token}\n`);
          }
          await dump.write(tokens, rows);
          writeSync(out, lines.join(''));
        });
      } finally {
        closeSync(out);
      }
      seeded.adminFile = file;
    }
  } finally {
    if (issueOut !== undefined) closeSync(issueOut);
    await dump.close();
  }

  // Opening the store as the server does makes its first signing key; the anonymous tokens are signed with it.
  const store = await openStore(target.databaseUrl);
  try {
    if (spec.anonymousTokens) {
      const key = await new Keyring(store.signingKeys).signingKey();
      const file = join(work, `${label}-anonymous.txt`);
      const out = openSync(file, 'w');
      try {
        const issuedAt = Date.now();
        for (let from = 0; from < appIds.length; from += BATCH_ROWS) {
          const lines = appIds
            .slice(from, from + BATCH_ROWS)
            .map((appId) => `${whoamiPath(appId)}\tBearer ${signAnonymousToken(key, appId, issuedAt, null).token}\n`);
          writeSync(out, lines.join(''));
        }
      } finally {
        closeSync(out);
      }
      seeded.anonymousFile = file;
    }
  } finally {
    await store.close();
  }
  seeded.seedSeconds = (performance.now() - started) / 1000;
  return seeded;
}

/** `count` made-up AppIDs (Tessera's format: 16 hex characters), with Basic, on `whoami`: each one 404. */
export function writeUnknownAppIds(file: string, count: number): void {
  const lines: string[] = [];
  for (let index = 0; index < count; index++) {
    const appId = randomBytes(8).toString('hex');
    lines.push(`${whoamiPath(appId)}\tBasic ${Buffer.from(`${appId}:bench`).toString('base64')}\n`);
  }
  writeLines(file, lines);
}

/** `count` well-formed admin tokens that were never stored, on `whoami` of a real app: each one 401. */
export function writeUnknownTokens(file: string, count: number, appId: string): void {
  const lines: string[] = [];
  for (let index = 0; index < count; index++) {
    lines.push(`${whoamiPath(appId)}\tBearer ${generateAccessToken(Date.now()).token}\n`);
  }
  writeLines(file, lines);
}

function writeLines(file: string, lines: string[]): void {
  const out = openSync(file, 'w');
  try {
    for (let from = 0; from < lines.length; from += BATCH_ROWS) writeSync(out, lines.slice(from, from + BATCH_ROWS).join(''));
  } finally {
    closeSync(out);
  }
}

function tableOf(name: string): TableSpec {
  const table = TABLES.find((candidate) => candidate.name === name);
  if (table === undefined) throw new Error(`no table ${name} in the store's dump specification`);
  return table;
}

/** A row in the table's column order; a column not named is null. */
function rowOf(table: TableSpec, values: Record<string, Value>): Row {
  return table.columns.map((column) => values[column.name] ?? null);
}

async function inBatches(count: number, write: (from: number, to: number) => Promise<void>): Promise<void> {
  for (let from = 0; from < count; from += BATCH_ROWS) await write(from, Math.min(count, from + BATCH_ROWS));
}
