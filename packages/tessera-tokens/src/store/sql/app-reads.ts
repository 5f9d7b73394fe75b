import { DEFAULT_APP_CONFIGURATION, type AccessTokenFormat, type AppConfiguration, type AppRecord } from '../../apps/app.js';
import type { AppReads } from '../../apps/app-reads.js';
import type { CredentialCreator, CredentialRecord } from '../../credentials/credential.js';
import { andThen } from '../../maybe-promise.js';
import { BatchedReads } from '../batched-reads.js';
import { bytesColumn, jsonColumn } from './rows.js';
import type { SqlDialect, SqlRunner } from './runner.js';

// How an app is read, with its credentials: by the server's app store (./apps.ts) and by what
// checking reads (./checking-reads.ts).

export interface AppRow {
  app_id: string;
  name: string;
  app_key: string;
  client_id: string;
  client_secret_hash: Buffer;
  admin_id: string;
  created_at: number;
  configuration: unknown;
  anonymous_cutoff: number | null;
  admin_generation: number;
  previous_secret_hash: Buffer | null;
  previous_secret_valid_until: number | null;
  credentials: unknown;
}

export const APP_COLUMN_LIST = `app_id, name, app_key, client_id, client_secret_hash, admin_id, created_at, configuration, anonymous_cutoff,
                     previous_secret_hash, previous_secret_valid_until, admin_generation`;

/** `select` of `APP_COLUMN_LIST` and the app's credentials (`CREDENTIALS_OF_APP`) from `apps`, then `rest`. */
export function selectApps(rest: string): { sqlite: string; postgres: string } {
  return {
    sqlite: `SELECT ${APP_COLUMN_LIST}, ${CREDENTIALS_OF_APP.sqlite} FROM apps ${rest}`,
    postgres: `SELECT ${APP_COLUMN_LIST}, ${CREDENTIALS_OF_APP.postgres} FROM apps ${rest}`,
  };
}

/** A list of ids as `selectAmong` reads it: a JSON array for SQLite, an array for PostgreSQL. */
export function idsParam(dialect: SqlDialect, ids: readonly string[]): { ids: unknown } {
  return { ids: dialect === 'sqlite' ? JSON.stringify(ids) : ids };
}

/** Reads an app at once on SQLite; on PostgreSQL, the reads asked for in one turn of the event loop share one statement. */
export function appReads(db: SqlRunner): AppReads {
  const findOne = appFinder(db);
  if (db.dialect !== 'postgres') return { findById: findOne };
  const selectMany = selectApps(`WHERE app_id = ANY(:ids::text[])`).postgres;
  const batched = new BatchedReads<string, AppRecord>({
    readMany: async (appIds) => (await db.all<AppRow>(selectMany, idsParam(db.dialect, appIds))).map(toApp),
    keyOf: (appId) => appId,
    keyOfValue: (app) => app.appId,
  });
  return { findById: (appId) => batched.read(appId) };
}

export const appFinder = (db: SqlRunner) => (appId: string) =>
  andThen(db.get<AppRow>(selectApps('WHERE app_id = :appId'), { appId }), (row) => row && toApp(row));

export function toApp(row: AppRow): AppRecord {
  return {
    appId: row.app_id,
    name: row.name,
    appKey: row.app_key,
    clientId: row.client_id,
    clientSecretHash: bytesColumn(row.client_secret_hash),
    adminId: row.admin_id,
    createdAt: row.created_at,
    configuration: { ...DEFAULT_APP_CONFIGURATION, ...jsonColumn<Partial<AppConfiguration>>(row.configuration) },
    anonymousCutoff: row.anonymous_cutoff,
    adminGeneration: row.admin_generation,
    previousSecret:
      row.previous_secret_hash === null || row.previous_secret_valid_until === null
        ? null
        : { hash: bytesColumn(row.previous_secret_hash), validUntil: row.previous_secret_valid_until },
    credentials: credentialsColumn(row.credentials),
  };
}

/** A credential as `CREDENTIALS_OF_APP` gives it: its bytes in hex, lists space-separated. */
interface CredentialJson {
  clientId: string;
  appId: string;
  name: string;
  scopes: string;
  expiresAt: number | null;
  allowFrom: string;
  secretHash: string;
  previousSecretHash: string | null;
  previousSecretValidUntil: number | null;
  createdAt: number;
  createdBy: CredentialCreator['kind'];
  createdById: string | null;
  lastUsedAt: number | null;
  accessTokenFormat: AccessTokenFormat | null;
}

const FIELDS = `'clientId', client_id, 'appId', app_id, 'name', name, 'scopes', scopes, 'expiresAt', expires_at,
  'allowFrom', allow_from, 'createdAt', created_at, 'createdBy', created_by, 'createdById', created_by_id,
  'lastUsedAt', last_used_at, 'previousSecretValidUntil', previous_secret_valid_until, 'accessTokenFormat', access_token_format`;

/**
 * A column of the app's row (`SELECT … FROM apps`): its credentials as one JSON array, so that an
 * app is read with them in one statement, and its cached record has them (null or `[]` for none).
 */
export const CREDENTIALS_OF_APP = {
  sqlite: `(SELECT json_group_array(json_object(${FIELDS},
              'secretHash', hex(secret_hash), 'previousSecretHash', hex(previous_secret_hash)))
            FROM credentials WHERE credentials.app_id = apps.app_id) AS credentials`,
  postgres: `(SELECT json_agg(json_build_object(${FIELDS},
              'secretHash', encode(secret_hash, 'hex'), 'previousSecretHash', encode(previous_secret_hash, 'hex')))
            FROM credentials WHERE credentials.app_id = apps.app_id) AS credentials`,
} as const;

/** Shared by every app without credentials (nearly all of them): one list rather than one each in the app cache. */
const NO_CREDENTIALS: readonly CredentialRecord[] = Object.freeze([]);

/** The credentials of a `CREDENTIALS_OF_APP` column, oldest first. */
export function credentialsColumn(value: unknown): readonly CredentialRecord[] {
  if (value === null || value === undefined) return NO_CREDENTIALS;
  const rows = jsonColumn<CredentialJson[]>(value);
  if (rows.length === 0) return NO_CREDENTIALS;
  return rows.map(toCredential).sort((a, b) => a.createdAt - b.createdAt || (a.clientId < b.clientId ? -1 : 1));
}

function toCredential(row: CredentialJson): CredentialRecord {
  return {
    clientId: row.clientId,
    appId: row.appId,
    name: row.name,
    scopes: Object.freeze(row.scopes.split(' ')),
    expiresAt: row.expiresAt,
    allowFrom: Object.freeze(row.allowFrom === '' ? [] : row.allowFrom.split(' ')),
    secretHash: hexBytes(row.secretHash),
    // SQLite's hex(NULL) is ''.
    previousSecret:
      row.previousSecretHash === null || row.previousSecretHash === '' || row.previousSecretValidUntil === null
        ? null
        : { hash: hexBytes(row.previousSecretHash), validUntil: row.previousSecretValidUntil },
    createdAt: row.createdAt,
    createdBy: creatorOf(row.createdBy, row.createdById),
    lastUsedAt: row.lastUsedAt,
    accessTokenFormat: row.accessTokenFormat ?? null,
  };
}

function hexBytes(hex: string): Buffer {
  return bytesColumn(Buffer.from(hex, 'hex'));
}

function creatorOf(kind: CredentialCreator['kind'], id: string | null): CredentialCreator {
  if (kind === 'developer') return { kind, developerId: id ?? '' };
  if (kind === 'admin') return { kind, clientId: id ?? '' };
  return { kind: 'operator' };
}
