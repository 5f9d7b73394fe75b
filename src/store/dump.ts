/**
 * Every table of a store, read and written as neutral rows, so that `copy.ts` moves a store from one
 * backend to the other (`sql/dump.ts` over either dialect, with `sqlite/dump.ts` and
 * `postgres/dump.ts` for what differs). A row is its values in the order of
 * `TableSpec.columns`: strings, numbers (every integer fits a JavaScript number: instants in ms,
 * ids, counts), Buffers and nulls; a JSON column is its JSON text.
 */

export type ColumnKind = 'text' | 'integer' | 'blob' | 'json';

export type Value = string | number | Buffer | null;

export type Row = Value[];

export interface TableSpec {
  name: string;
  columns: readonly { name: string; kind: ColumnKind }[];
  /** The primary key's columns: rows are read in their order, a batch after the last key read. */
  key: readonly string[];
  /**
   * The column whose values a counter gives (SQLite AUTOINCREMENT, a PostgreSQL identity): the
   * target's counter is set past the source's, so that no id is given twice.
   */
  counter?: string;
}

const columns = (spec: Record<string, ColumnKind>) => Object.entries(spec).map(([name, kind]) => ({ name, kind }));

/** The tables in the order of their references: a row's parents are copied before it. */
export const TABLES: readonly TableSpec[] = [
  {
    name: 'apps',
    columns: columns({
      app_id: 'text',
      name: 'text',
      app_key: 'text',
      client_id: 'text',
      client_secret_hash: 'blob',
      admin_id: 'text',
      created_at: 'integer',
      configuration: 'json',
      anonymous_cutoff: 'integer',
      previous_secret_hash: 'blob',
      previous_secret_valid_until: 'integer',
      admin_generation: 'integer',
    }),
    key: ['app_id'],
  },
  {
    name: 'tokens',
    columns: columns({
      selector: 'blob',
      verifier_hash: 'blob',
      app_id: 'text',
      kind: 'text',
      issued_at: 'integer',
      expires_at: 'integer',
      client_id: 'text',
      scopes: 'text',
      status_index: 'integer',
    }),
    key: ['selector'],
  },
  {
    name: 'credentials',
    columns: columns({
      client_id: 'text',
      app_id: 'text',
      name: 'text',
      scopes: 'text',
      expires_at: 'integer',
      allow_from: 'text',
      secret_hash: 'blob',
      previous_secret_hash: 'blob',
      previous_secret_valid_until: 'integer',
      created_at: 'integer',
      created_by: 'text',
      created_by_id: 'text',
      last_used_at: 'integer',
      access_token_format: 'text',
    }),
    key: ['client_id'],
  },
  {
    name: 'revoked_tokens',
    columns: columns({ seq: 'integer', token_id: 'blob', app_id: 'text', expires_at: 'integer' }),
    key: ['seq'],
    counter: 'seq',
  },
  {
    name: 'keys',
    columns: columns({ id: 'integer', secret: 'blob', created_at: 'integer', retired_at: 'integer' }),
    key: ['id'],
    counter: 'id',
  },
  {
    name: 'events',
    columns: columns({
      id: 'integer',
      app_id: 'text',
      type: 'text',
      at: 'integer',
      principal: 'text',
      client_address: 'text',
      details: 'json',
      idempotency_key: 'blob',
    }),
    key: ['id'],
    counter: 'id',
  },
  {
    name: 'event_counts',
    columns: columns({ app_id: 'text', bucket: 'integer', type: 'text', principal: 'text', reason: 'text', count: 'integer' }),
    key: ['app_id', 'bucket', 'type', 'principal', 'reason'],
  },
  // Not `event_count_writers` (migration 14), deliberately: it remembers, for each process writing
  // counts into this database, the last batch it added, so that a batch it writes again after a
  // commit in doubt is added once. A process writes again only into the database it wrote to, and
  // the processes that will write into the target are new ones, with writer ids of their own: the
  // source's rows would guard nothing there (and are forgotten within a day anyway).
  {
    name: 'developers',
    columns: columns({
      id: 'text',
      email: 'text',
      password_hash: 'text',
      created_at: 'integer',
      disabled_at: 'integer',
      email_confirmed_at: 'integer',
    }),
    key: ['id'],
  },
  {
    name: 'developer_sessions',
    columns: columns({
      id: 'text',
      secret_hash: 'blob',
      developer_id: 'text',
      created_at: 'integer',
      last_seen_at: 'integer',
      expires_at: 'integer',
    }),
    key: ['id'],
  },
  {
    name: 'one_time_links',
    columns: columns({
      id: 'text',
      secret_hash: 'blob',
      purpose: 'text',
      developer_id: 'text',
      app_id: 'text',
      email: 'text',
      invited_by: 'text',
      created_at: 'integer',
      expires_at: 'integer',
    }),
    key: ['id'],
  },
  {
    name: 'app_members',
    columns: columns({ app_id: 'text', developer_id: 'text', role: 'text', added_at: 'integer' }),
    key: ['app_id', 'developer_id'],
  },
  {
    name: 'developer_events',
    columns: columns({
      id: 'integer',
      developer_id: 'text',
      type: 'text',
      at: 'integer',
      actor: 'text',
      client_address: 'text',
      details: 'json',
    }),
    key: ['id'],
    counter: 'id',
  },
  {
    name: 'once_claims',
    columns: columns({ value: 'text', keep_until: 'integer' }),
    key: ['value'],
  },
  {
    name: 'attestation_debug_tokens',
    columns: columns({ id: 'text', app_id: 'text', name: 'text', token_hash: 'blob', created_at: 'integer', last_used_at: 'integer' }),
    key: ['id'],
  },
  {
    name: 'attestation_settings',
    columns: columns({ app_id: 'text', provider: 'text', settings: 'text', updated_at: 'integer' }),
    key: ['app_id', 'provider'],
  },
  {
    name: 'attestation_keys',
    columns: columns({ app_id: 'text', key_id: 'blob', public_key: 'blob', counter: 'integer', created_at: 'integer' }),
    key: ['app_id', 'key_id'],
  },
  {
    name: 'attestation_claims',
    columns: columns({ claim: 'blob' }),
    key: ['claim'],
  },
  {
    name: 'pow_serial_blocks',
    columns: columns({ block: 'integer', claimed: 'blob', expires_at: 'integer' }),
    key: ['block'],
    counter: 'block',
  },
  // The private keys are encrypted under KEY_ENCRYPTION_KEY (or an SQLite file's `.kek`): the target's
  // instances need the same key (docs/deployment.md, "Moving from SQLite to PostgreSQL").
  {
    name: 'jwt_keys',
    columns: columns({
      kid: 'text',
      algorithm: 'text',
      public_jwk: 'text',
      private_key: 'blob',
      created_at: 'integer',
      signs_from: 'integer',
      published_until: 'integer',
    }),
    key: ['kid'],
  },
  {
    name: 'status_list_blocks',
    columns: columns({
      first_index: 'integer',
      size: 'integer',
      app_id: 'text',
      kind: 'text',
      reserved_at: 'integer',
      expires_by: 'integer',
    }),
    key: ['first_index'],
  },
  {
    name: 'status_list_next',
    columns: columns({ id: 'integer', next_index: 'integer' }),
    key: ['id'],
  },
  {
    name: 'status_list_revocations',
    columns: columns({ status_index: 'integer', expires_at: 'integer' }),
    key: ['status_index'],
  },
  // Webhooks after the events: the target's trigger makes no deliveries for the events copied. Their
  // secrets are encrypted under KEY_ENCRYPTION_KEY, as the JWT keys. Mail waiting to be sent and the
  // alerts not yet mailed are not copied.
  {
    name: 'webhooks',
    columns: columns({
      id: 'text',
      app_id: 'text',
      url: 'text',
      event_types: 'json',
      secret: 'blob',
      previous_secret: 'blob',
      previous_secret_until: 'integer',
      created_at: 'integer',
    }),
    key: ['id'],
  },
  {
    name: 'webhook_deliveries',
    columns: columns({
      id: 'integer',
      webhook_id: 'text',
      app_id: 'text',
      event_id: 'integer',
      event_type: 'text',
      event_at: 'integer',
      principal: 'text',
      client_address: 'text',
      details: 'json',
      state: 'text',
      attempts: 'integer',
      next_attempt_at: 'integer',
      created_at: 'integer',
      last_attempt_at: 'integer',
      last_status: 'integer',
      last_error: 'text',
      last_response: 'text',
    }),
    key: ['id'],
    counter: 'id',
  },
  {
    name: 'alert_opt_outs',
    columns: columns({ app_id: 'text', developer_id: 'text' }),
    key: ['app_id', 'developer_id'],
  },
];

/** One store's tables, as the copy reads them (the source) or writes them (the target). */
export interface StoreDump {
  readonly backend: 'sqlite' | 'postgres';
  /** Where it is, for messages: a file path, or the URL without its password. */
  readonly description: string;
  /** The newest migration applied. */
  schemaVersion(): Promise<number>;
  /** Rows per table. */
  count(table: TableSpec): Promise<number>;
  /** Up to `limit` rows in key order, after the row whose key is `after` (from the start without one). */
  read(table: TableSpec, after: Value[] | undefined, limit: number): Promise<Row[]>;
  /** The rows whose one-column key is among `keys`, in any order. */
  readKeys(table: TableSpec, keys: Value[]): Promise<Row[]>;
  /** The keys of up to `limit` rows picked at random (`where`: a condition on the rows, in SQL common to both). */
  sampleKeys(table: TableSpec, limit: number, where?: string): Promise<Value[]>;
  /** Writes rows as they are, ids and all, in one transaction. */
  write(table: TableSpec, rows: Row[]): Promise<void>;
  /** Deletes every row (the target's first key, which opening a store makes). */
  clear(table: TableSpec): Promise<void>;
  /** The last value the table's counter gave (0 for none): at least the largest in the table. */
  counterPosition(table: TableSpec): Promise<number>;
  /** Sets the table's counter so that the next value it gives is above `position`. */
  setCounterPosition(table: TableSpec, position: number): Promise<void>;
  close(): Promise<void>;
}

/** How a store is opened for a copy: the source is read in one snapshot; the target must exist already as a Tessera store or be new. */
export type DumpRole = 'source' | 'target';

/** A row's key, in `table.key` order. */
export function keyOf(table: TableSpec, row: Row): Value[] {
  return table.key.map((name) => row[table.columns.findIndex((column) => column.name === name)]!);
}

/** An integer as the runner reads it, if this copy can carry it exactly. */
export function integerOf(value: unknown, where: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value))
    throw new Error(`${where}: ${String(value)} is not an integer this copy can carry`);
  return value;
}
