import { readSchemaState } from 'tessera-tokens/internal/store/postgres/schema-state.js';
import type pg from 'pg';
import { currentBuild, type BuildInfo } from 'tessera-tokens/internal/release.js';
import {
  migrationRecord,
  RELEASES_RECORDED_FROM,
  SchemaRefused,
  schemaVerdict,
  type Migration,
  type MigrationReport,
} from 'tessera-tokens/internal/store/schema.js';

/** Key of the advisory lock that serializes migrations across instances (and CLIs) starting together. */
const MIGRATION_LOCK = 7_246_135_001;
/** How long a migration waits for another session's lock before giving up (and how often it looks). */
export const MIGRATION_LOCK_WAIT_MS = 60_000;
const LOCK_POLL_MS = 250;

export interface MigrateOptions {
  /** How long to wait for the lock another session holds; `MIGRATION_LOCK_WAIT_MS` unless told. */
  lockWaitMs?: number;
  /** Told once per migration step that has to wait for another session's lock, and who holds it. */
  onWaiting?: (message: string) => void;
  /** Told what was done beyond the schema: the sessions of release 0.1.0 ended after a migration. */
  onNotice?: (message: string) => void;
  /** Says what would be applied, and applies nothing (`tessera migrate --dry-run`). */
  dryRun?: boolean;
}

/**
 * The application_name of release 0.1.0, which registers nowhere: its sessions are how PostgreSQL
 * shows that it still serves (`src/upgrade/`), and those ended after a migration
 * (`endSessionsOfReleaseBeforeRegistration`).
 */
export const RELEASE_BEFORE_REGISTRATION_APPLICATION_NAME = 'tessera';

/**
 * Applies the migrations this database has not had yet (`POSTGRES_MIGRATIONS`, below), after the
 * start-up guard (`schemaVerdict`) said this build may serve on it. Each step is one transaction
 * that first takes a transaction-level advisory lock, so that instances starting together take
 * turns, and nothing outlives the transaction: a transaction pooler (PgBouncer's `pool_mode =
 * transaction`) carries it, and a connection lost midway leaves neither a lock nor a half-applied
 * step behind. A session-level lock taken by an older release conflicts with it too. A new
 * database gets every step in one transaction and is finalized for this release in it: no older
 * release has served on it, and no instance starting beside this one sees it otherwise.
 */
export async function migrate(pool: pg.Pool, options: MigrateOptions = {}): Promise<MigrationReport> {
  const build = currentBuild();
  const migrations = POSTGRES_MIGRATIONS;
  // Up to date already: nothing to write, so a role that may only read and write rows (`tessera
  // serve`'s, docs/deployment.md) or only read (another service's TesseraVerifier) opens the store.
  const before = await readSchemaState(pool);
  const verdict = schemaVerdict(
    migrations.map((migration) => migration.version),
    before,
    build,
  );
  if ('refused' in verdict) throw new SchemaRefused(verdict.refused);
  const { pending } = verdict;
  if (pending.length === 0 || options.dryRun === true) return { before, pending, applied: [] };
  const applied: number[] = [];
  try {
    for (const migration of migrations) {
      if (!pending.includes(migration.version)) continue;
      await inTransaction(pool, async (client) => {
        await lockMigrations(client, options);
        await client.query('CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, applied_at bigint NOT NULL)');
        const { rows } = await client.query<{ version: number }>('SELECT version FROM schema_migrations');
        if (rows.length === 0) {
          // A new database: its whole schema, finalized for this release, in one transaction, so
          // that an instance starting beside this one never opens it half-made or not yet finalized
          // (it would serve with release 0.1.0's capabilities until its next upgrade heartbeat).
          for (const step of migrations) {
            await applyMigration(client, step, build);
            applied.push(step.version);
          }
          await client.query('UPDATE upgrade_state SET finalized_release = $1, finalized_at = $2 WHERE id = 1', [
            build.version,
            Date.now(),
          ]);
          return;
        }
        if (rows.some((row) => row.version === migration.version)) return; // another instance applied it while this one waited
        await applyMigration(client, migration, build);
        applied.push(migration.version);
      });
    }
  } catch (error) {
    throw migrationFailed(error, pending, build);
  }
  if (applied.length > 0) await endSessionsOfReleaseBeforeRegistration(pool, options.onNotice);
  return { before, pending, applied };
}

/** One migration's SQL and its row in schema_migrations, in the caller's transaction. */
async function applyMigration(client: pg.PoolClient, migration: Migration, build: BuildInfo): Promise<void> {
  await client.query(migration.sql);
  if (migration.version < RELEASES_RECORDED_FROM) {
    await client.query('INSERT INTO schema_migrations (version, applied_at) VALUES ($1, $2)', [migration.version, Date.now()]);
    return;
  }
  const { release, servesFrom } = migrationRecord(build);
  await client.query('INSERT INTO schema_migrations (version, applied_at, release, serves_from) VALUES ($1, $2, $3, $4)', [
    migration.version,
    Date.now(),
    release,
    servesFrom,
  ]);
}

/** A migration that failed, said for an operator: a role that may not change the schema is told to run `tessera migrate` as its owner. */
function migrationFailed(error: unknown, pending: readonly number[], build: BuildInfo): unknown {
  const { code, message } = error as { code?: string; message?: string };
  if (code !== '42501') return error; // insufficient_privilege
  return new SchemaRefused(
    `The database's schema lacks migration${pending.length === 1 ? '' : 's'} ${pending.join(', ')} of Tessera ${build.version}, ` +
      `and this database role may not make ${pending.length === 1 ? 'it' : 'them'} (${message ?? code}). Run \`tessera migrate\` ` +
      'as the role that owns the schema, then start again (docs/deployment.md, "Upgrading").',
  );
}

/**
 * Ends the database sessions of release 0.1.0 after a migration. It prepares `SELECT * FROM apps`
 * and `SELECT * FROM events` as named statements, which fail with "cached plan must not change
 * result type" (a 500) on every connection that prepared them before a column was added, until that
 * connection is closed. Ended, its pool opens new connections that prepare them again: a statement
 * running at that instant is answered 503 (Retry-After) by that release, never a 500 afterwards.
 * Later releases name every column they read, so that a column added leaves their statements be.
 */
async function endSessionsOfReleaseBeforeRegistration(pool: pg.Pool, notice: ((message: string) => void) | undefined): Promise<void> {
  try {
    const { rows } = await pool.query<{ ended: boolean }>(
      `SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity
        WHERE datname = current_database() AND application_name = $1 AND pid <> pg_backend_pid()`,
      [RELEASE_BEFORE_REGISTRATION_APPLICATION_NAME],
    );
    const ended = rows.filter((row) => row.ended).length;
    if (ended > 0)
      notice?.(`ended ${ended} database session(s) of Tessera 0.1.0, so that it prepares its statements again on the new schema`);
  } catch (error) {
    notice?.(
      `the database sessions of Tessera 0.1.0 could not be ended (${(error as Error).message}): restart its instances, ` +
        'whose statements prepared before this migration fail with "cached plan must not change result type" until they reconnect',
    );
  }
}

/** `work` in a transaction on a connection of its own; a connection that failed is destroyed, never pooled again. */
async function inTransaction(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<void>): Promise<void> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query('BEGIN');
    await work(client);
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch((rollbackError: Error) => (broken = rollbackError));
    broken ??= error as Error;
    throw error;
  } finally {
    client.release(broken);
  }
}

/**
 * Takes the migrations' lock for the transaction, polling for it rather than blocking on it: the
 * wait is told (who holds it) and bounded, and each statement of it is short, whatever the pool's
 * statement timeout.
 */
async function lockMigrations(client: pg.PoolClient, options: MigrateOptions): Promise<void> {
  const waitMs = options.lockWaitMs ?? MIGRATION_LOCK_WAIT_MS;
  const started = Date.now();
  let told = false;
  for (;;) {
    const { rows } = await client.query<{ locked: boolean }>('SELECT pg_try_advisory_xact_lock($1) AS locked', [MIGRATION_LOCK]);
    if (rows[0]?.locked === true) return;
    const waited = Date.now() - started;
    if (waited >= waitMs) {
      throw new Error(
        `gave up after ${Math.round(waited / 1000)} s waiting for the migrations' lock, which ${await lockHolder(client)} holds. ` +
          'If no Tessera is migrating this database, end that session (SELECT pg_terminate_backend(PID)) and start again.',
      );
    }
    if (!told) {
      told = true;
      options.onWaiting?.(
        `waiting up to ${Math.round(waitMs / 1000)} s for the migrations' lock, which ${await lockHolder(client)} holds (another instance migrating?)`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, LOCK_POLL_MS));
  }
}

/** Who holds the migrations' lock, as an operator can find it in pg_stat_activity. */
async function lockHolder(client: pg.PoolClient): Promise<string> {
  const { rows } = await client.query<{ pid: number; application_name: string; state: string | null }>(
    `SELECT a.pid, a.application_name, a.state
       FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
      WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
        AND ((l.classid::bigint << 32) | l.objid::bigint) = $1
        AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
    [MIGRATION_LOCK],
  );
  const holder = rows[0];
  if (holder === undefined) return 'another session';
  return `the session of pid ${holder.pid} (application_name ${JSON.stringify(holder.application_name)}, ${holder.state ?? 'state unknown'})`;
}

/** Versioned schema; each entry is applied once, in order, in one transaction. Never edit a shipped one. */
export const POSTGRES_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    sql: `
      CREATE TABLE apps (
        app_id             text   PRIMARY KEY,
        name               text   NOT NULL,
        app_key            text   NOT NULL,
        client_id          text   NOT NULL UNIQUE,
        client_secret_hash bytea  NOT NULL,
        admin_id           text   NOT NULL,
        created_at         bigint NOT NULL,
        configuration      jsonb  NOT NULL
      );

      CREATE TABLE tokens (
        selector      bytea  PRIMARY KEY,
        verifier_hash bytea  NOT NULL,
        app_id        text   NOT NULL,
        kind          text   NOT NULL CHECK (kind IN ('admin', 'anonymous')),
        issued_at     bigint NOT NULL,
        expires_at    bigint
      );

      CREATE INDEX tokens_by_app ON tokens (app_id);

      -- Every instance LISTENs on tessera_changes and drops what a notification names from its
      -- caches: an app's id when an app changed, '*' when tokens were changed or removed.
      CREATE FUNCTION tessera_app_changed() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM pg_notify('tessera_changes', COALESCE(NEW.app_id, OLD.app_id));
        RETURN NULL;
      END $$;
      CREATE TRIGGER apps_changed AFTER INSERT OR UPDATE OR DELETE ON apps
        FOR EACH ROW EXECUTE FUNCTION tessera_app_changed();

      CREATE FUNCTION tessera_tokens_changed() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM pg_notify('tessera_changes', '*');
        RETURN NULL;
      END $$;
      CREATE TRIGGER tokens_changed AFTER UPDATE OR DELETE ON tokens
        FOR EACH STATEMENT EXECUTE FUNCTION tessera_tokens_changed();
    `,
  },
  {
    version: 2,
    sql: `
      -- Housekeeping finds expired tokens through this; tokens that never expire are not in it.
      CREATE INDEX tokens_by_expiry ON tokens (expires_at) WHERE expires_at IS NOT NULL;

      -- Housekeeping removes only expired tokens, which every instance refuses anyway: it sets
      -- tessera.quiet for its transaction so that caches everywhere are not emptied for nothing.
      CREATE OR REPLACE FUNCTION tessera_tokens_changed() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF current_setting('tessera.quiet', true) IS DISTINCT FROM 'on' THEN
          PERFORM pg_notify('tessera_changes', '*');
        END IF;
        RETURN NULL;
      END $$;

      -- The audit log. Ids come from a sequence: they only grow, so they are pagination cursors.
      CREATE TABLE events (
        id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        app_id         text   NOT NULL,
        type           text   NOT NULL,
        at             bigint NOT NULL,
        principal      text,
        client_address text,
        details        jsonb  NOT NULL
      );

      CREATE INDEX events_by_app ON events (app_id, id);
    `,
  },
  {
    version: 3,
    sql: `
      -- The keys that sign anonymous tokens. The newest active key signs; a retired key keeps its
      -- row (its id is never reused) without its secret. Ids take two bytes in a token.
      CREATE TABLE keys (
        id         integer PRIMARY KEY CHECK (id BETWEEN 1 AND 65535),
        secret     bytea,
        created_at bigint NOT NULL,
        retired_at bigint
      );

      -- Anonymous tokens issued at or before this instant are refused (the last revoke-all). Set by
      -- an UPDATE of the app, which notifies every instance through apps_changed.
      ALTER TABLE apps ADD COLUMN anonymous_cutoff bigint;

      -- Anonymous tokens revoked one by one, until they expire. Every instance reads the rows with a
      -- seq above the last it read; writers lock the table, so that seq order is commit order.
      CREATE TABLE revoked_tokens (
        seq        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        token_id   bytea  NOT NULL UNIQUE,
        app_id     text   NOT NULL,
        expires_at bigint
      );

      CREATE INDEX revoked_tokens_by_app ON revoked_tokens (app_id);
      CREATE INDEX revoked_tokens_by_expiry ON revoked_tokens (expires_at) WHERE expires_at IS NOT NULL;

      CREATE FUNCTION tessera_keys_changed() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM pg_notify('tessera_changes', '*');
        RETURN NULL;
      END $$;
      CREATE TRIGGER keys_changed AFTER INSERT OR UPDATE OR DELETE ON keys
        FOR EACH STATEMENT EXECUTE FUNCTION tessera_keys_changed();

      -- A revocation does not empty the caches: instances read the new rows only.
      CREATE FUNCTION tessera_revocations_changed() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM pg_notify('tessera_changes', 'revoked-tokens');
        RETURN NULL;
      END $$;
      CREATE TRIGGER revoked_tokens_changed AFTER INSERT ON revoked_tokens
        FOR EACH STATEMENT EXECUTE FUNCTION tessera_revocations_changed();
    `,
  },
  {
    version: 4,
    sql: `
      -- Events recorded by requests are counted per app and UTC minute (src/events/retention.ts):
      -- anonymous tokens issued and revoked by themselves only so, since anyone with the public
      -- AppID can cause any number of them. principal and reason are '' for none.
      CREATE TABLE event_counts (
        app_id    text   NOT NULL,
        bucket    bigint NOT NULL,
        type      text   NOT NULL,
        principal text   NOT NULL,
        reason    text   NOT NULL,
        count     bigint NOT NULL,
        PRIMARY KEY (app_id, bucket, type, principal, reason)
      );

      -- Housekeeping removes the minutes past the retention through this.
      CREATE INDEX event_counts_by_bucket ON event_counts (bucket);

      -- Each class of stored events is trimmed to its own cap: refusals (anyone can cause them) and
      -- the audit events of secret holders. The class follows from the type, so existing rows need
      -- no rewrite; rows an earlier release wrote for anonymous tokens stay, in the audit class,
      -- older than anything written from now on, until EVENTS_RETENTION_DAYS removes them.
      CREATE INDEX events_audit_by_app ON events (app_id, id) WHERE type <> 'token.refused';
      CREATE INDEX events_refusals_by_app ON events (app_id, id) WHERE type = 'token.refused';
    `,
  },
  {
    version: 5,
    sql: `
      -- The ClientSecret that a rotation with a grace period replaced: its digest only, and the
      -- instant (UNIX ms) from which it no longer works. Both null when there is none. Set by an
      -- UPDATE of the app, which notifies every instance through apps_changed.
      ALTER TABLE apps ADD COLUMN previous_secret_hash bytea;
      ALTER TABLE apps ADD COLUMN previous_secret_valid_until bigint;
      ALTER TABLE apps ADD CONSTRAINT apps_previous_secret_whole
        CHECK ((previous_secret_hash IS NULL) = (previous_secret_valid_until IS NULL));
    `,
  },
  {
    version: 6,
    sql: `
      -- Developer accounts (src/developers/). The email is stored normalised (trimmed, lower-case),
      -- the password only as its Argon2id PHC string (null until set through a one-time link).
      -- Deleting a developer or an app deletes what refers to it. None of these tables notifies:
      -- nothing of them is cached, every instance reads them from here.
      CREATE TABLE developers (
        id            text   PRIMARY KEY,
        email         text   NOT NULL UNIQUE,
        password_hash text,
        created_at    bigint NOT NULL,
        disabled_at   bigint
      );

      -- The portal's sessions: the token's id, and the SHA-256 of its secret. expires_at is the
      -- earlier of the idle and the absolute expiry (src/developers/session.ts).
      CREATE TABLE developer_sessions (
        id           text   PRIMARY KEY,
        secret_hash  bytea  NOT NULL,
        developer_id text   NOT NULL REFERENCES developers (id) ON DELETE CASCADE,
        created_at   bigint NOT NULL,
        last_seen_at bigint NOT NULL,
        expires_at   bigint NOT NULL
      );

      CREATE INDEX developer_sessions_by_developer ON developer_sessions (developer_id);
      CREATE INDEX developer_sessions_by_expiry ON developer_sessions (expires_at);

      -- One-time links: a password link names its developer; an invitation, its app and address.
      CREATE TABLE one_time_links (
        id           text   PRIMARY KEY,
        secret_hash  bytea  NOT NULL,
        purpose      text   NOT NULL CHECK (purpose IN ('set_password', 'reset_password', 'invitation')),
        developer_id text   REFERENCES developers (id) ON DELETE CASCADE,
        app_id       text   REFERENCES apps (app_id) ON DELETE CASCADE,
        email        text,
        invited_by   text   REFERENCES developers (id) ON DELETE CASCADE,
        created_at   bigint NOT NULL,
        expires_at   bigint NOT NULL,
        CHECK (CASE WHEN purpose = 'invitation'
                    THEN developer_id IS NULL AND app_id IS NOT NULL AND email IS NOT NULL
                    ELSE developer_id IS NOT NULL AND app_id IS NULL AND email IS NULL AND invited_by IS NULL END)
      );

      CREATE INDEX one_time_links_by_developer ON one_time_links (developer_id);
      CREATE INDEX one_time_links_by_app ON one_time_links (app_id, email);
      CREATE INDEX one_time_links_by_inviter ON one_time_links (invited_by);
      CREATE INDEX one_time_links_by_expiry ON one_time_links (expires_at);

      -- Who owns and who collaborates on an app: at most one owner each. An app with no owner is
      -- the operator's.
      CREATE TABLE app_members (
        app_id       text   NOT NULL REFERENCES apps (app_id) ON DELETE CASCADE,
        developer_id text   NOT NULL REFERENCES developers (id) ON DELETE CASCADE,
        role         text   NOT NULL CHECK (role IN ('owner', 'collaborator')),
        added_at     bigint NOT NULL,
        PRIMARY KEY (app_id, developer_id)
      );

      CREATE UNIQUE INDEX app_members_one_owner ON app_members (app_id) WHERE role = 'owner';
      CREATE INDEX app_members_by_developer ON app_members (developer_id);

      -- A developer's account log (src/developers/events.ts), apart from the apps' audit log.
      CREATE TABLE developer_events (
        id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        developer_id   text   NOT NULL REFERENCES developers (id) ON DELETE CASCADE,
        type           text   NOT NULL,
        at             bigint NOT NULL,
        actor          text   NOT NULL CHECK (actor IN ('operator', 'developer')),
        client_address text,
        details        jsonb  NOT NULL
      );

      CREATE INDEX developer_events_by_developer ON developer_events (developer_id, id);
    `,
  },
  {
    version: 7,
    sql: `
      -- The once values of the portal's forms that may be sent once (src/once-claims.ts), claimed in the
      -- transaction of the change each was sent with, and kept until keep_until (UNIX ms), past
      -- which the form is refused anyway.
      CREATE TABLE once_claims (
        value      text   PRIMARY KEY,
        keep_until bigint NOT NULL
      );

      CREATE INDEX once_claims_by_expiry ON once_claims (keep_until);
    `,
  },
  {
    version: 8,
    sql: `
      -- Further credentials of an app (src/credentials/): a ClientID and the HMAC of its
      -- ClientSecret, as the app's own, with a name, its scopes (space-separated, sorted), an
      -- optional expiry, the client addresses that may use it (CIDRs, space-separated; '' for any),
      -- who made it (created_by: operator, developer or admin; created_by_id: the developer's id, or
      -- the ClientID an admin token was issued to) and when it was last used (written at most once a
      -- minute). Deleting the app deletes them.
      CREATE TABLE credentials (
        client_id                   text   PRIMARY KEY,
        app_id                      text   NOT NULL REFERENCES apps (app_id) ON DELETE CASCADE,
        name                        text   NOT NULL,
        scopes                      text   NOT NULL,
        expires_at                  bigint,
        allow_from                  text   NOT NULL,
        secret_hash                 bytea  NOT NULL,
        previous_secret_hash        bytea,
        previous_secret_valid_until bigint,
        created_at                  bigint NOT NULL,
        created_by                  text   NOT NULL CHECK (created_by IN ('operator', 'developer', 'admin')),
        created_by_id               text,
        last_used_at                bigint,
        CHECK ((previous_secret_hash IS NULL) = (previous_secret_valid_until IS NULL))
      );

      CREATE INDEX credentials_by_app ON credentials (app_id);

      -- Every instance drops the app from its caches when one of its credentials changes, as when
      -- the app itself does; when it was last used is no such change.
      CREATE TRIGGER credentials_changed
        AFTER INSERT OR DELETE OR UPDATE OF name, scopes, expires_at, allow_from, secret_hash, previous_secret_hash,
          previous_secret_valid_until ON credentials
        FOR EACH ROW EXECUTE FUNCTION tessera_app_changed();

      -- A token issued from a credential: its ClientID and the scopes it was issued with (the
      -- credential's, or fewer). Both null for every other token. Revoking the credential finds its
      -- tokens among its app's (tokens_by_app): an index of their own would cost every scoped
      -- token's insert, for a revocation that is rare.
      ALTER TABLE tokens ADD COLUMN client_id text;
      ALTER TABLE tokens ADD COLUMN scopes text;
    `,
  },
  {
    version: 9,
    sql: `
      -- The newest event of a kind that people and server code cause now and then (a rotation, an
      -- exposed ClientSecret, a change of settings or members), found at once however many token
      -- events an app keeps (src/apps/secret-exposure.ts, on every app of the portal's list). Token
      -- events, nearly every row, are left out, so writing them costs nothing more. The condition
      -- is written out as it is here in the statements that use it (src/store/sql/events.ts).
      CREATE INDEX events_changes_by_app ON events (app_id, type, id)
        WHERE type NOT IN ('token.issued', 'token.revoked', 'token.refused');
    `,
  },
  {
    version: 10,
    sql: `
      -- Counts the changes that took admin authority away: a rotation of the app's ClientSecret or
      -- of a credential's, a credential revoked, the admin tokens revoked. A token is inserted only
      -- if its app's count is still the one its request was authenticated against
      -- (src/store/sql/tokens.ts), so that a revocation wins every race with issuance.
      ALTER TABLE apps ADD COLUMN admin_generation bigint NOT NULL DEFAULT 0;
    `,
  },
  {
    version: 11,
    sql: `
      -- The event counts per app and UTC hour, kept by a trigger from the counts per minute
      -- (event_counts, which writes never stop adding to), so that a chart of days or hours reads
      -- 24 times fewer rows: 30 days of an app are 720 buckets rather than 43,200. A trigger keeps
      -- them also for the counts an instance of an earlier release writes during an upgrade. The
      -- hours already counted are summed once, here.
      CREATE TABLE event_counts_hourly (
        app_id    text   NOT NULL,
        bucket    bigint NOT NULL,
        type      text   NOT NULL,
        principal text   NOT NULL,
        reason    text   NOT NULL,
        count     bigint NOT NULL,
        PRIMARY KEY (app_id, bucket, type, principal, reason)
      );

      CREATE INDEX event_counts_hourly_by_bucket ON event_counts_hourly (bucket);

      INSERT INTO event_counts_hourly (app_id, bucket, type, principal, reason, count)
        SELECT app_id, bucket - bucket % 3600000, type, principal, reason, sum(count)
        FROM event_counts GROUP BY 1, 2, 3, 4, 5;

      -- What a count per minute adds (inserted, or added to), added to its hour.
      CREATE FUNCTION tessera_count_hourly() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO event_counts_hourly (app_id, bucket, type, principal, reason, count)
          VALUES (NEW.app_id, NEW.bucket - NEW.bucket % 3600000, NEW.type, NEW.principal, NEW.reason,
                  NEW.count - CASE WHEN TG_OP = 'UPDATE' THEN OLD.count ELSE 0 END)
          ON CONFLICT (app_id, bucket, type, principal, reason)
          DO UPDATE SET count = event_counts_hourly.count + excluded.count;
        RETURN NULL;
      END $$;
      CREATE TRIGGER event_counts_hourly AFTER INSERT OR UPDATE OF count ON event_counts
        FOR EACH ROW EXECUTE FUNCTION tessera_count_hourly();
    `,
  },
  {
    version: 12,
    sql: `
      -- Which release applied each migration from here on, and the oldest release that may serve on
      -- the schema it made (src/release.ts): later releases' start-up guard reads them.
      ALTER TABLE schema_migrations ADD COLUMN release text;
      ALTER TABLE schema_migrations ADD COLUMN serves_from text;

      -- The instances serving on this database, as each last said (src/upgrade/registry.ts): an
      -- older release among them holds back the capabilities it would misread.
      CREATE TABLE instances (
        id           text    PRIMARY KEY,
        release      text    NOT NULL,
        build_commit text    NOT NULL,
        host         text    NOT NULL,
        pid          integer NOT NULL,
        started_at   bigint  NOT NULL,
        seen_at      bigint  NOT NULL
      );

      -- One row: the release whose capabilities every instance may use (finalized_release), and
      -- when an instance of an older release was last seen. A database that had a schema before
      -- this migration was served by release 0.1.0 or a build before it; migrate() finalizes a new
      -- database for its own release at once.
      CREATE TABLE upgrade_state (
        id                integer PRIMARY KEY CHECK (id = 1),
        finalized_release text    NOT NULL,
        finalized_at      bigint,
        older_seen_at     bigint  NOT NULL
      );
      INSERT INTO upgrade_state (id, finalized_release, finalized_at, older_seen_at)
        VALUES (1, '0.1.0', NULL, (extract(epoch FROM clock_timestamp()) * 1000)::bigint);

      -- Release 0.1.0 rotates a ClientSecret and revokes admin tokens without counting the change
      -- in admin_generation (migration 10), so that a token request another instance authenticated
      -- before would still be stored. These triggers count it for whichever release made it: they
      -- take the app's row FOR UPDATE first, as withdrawAdminGrants does, so that a token insert
      -- holding it FOR KEY SHARE is decided after the change. Housekeeping's deletes of expired
      -- tokens (tessera.quiet) take nothing away; a change that withdrawAdminGrants counted
      -- (tessera.withdrawn) is not counted twice.
      CREATE FUNCTION tessera_secret_rotated() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.client_secret_hash IS DISTINCT FROM OLD.client_secret_hash
           AND current_setting('tessera.withdrawn', true) IS DISTINCT FROM 'on' THEN
          PERFORM 1 FROM apps WHERE app_id = NEW.app_id FOR UPDATE;
          NEW.admin_generation := NEW.admin_generation + 1;
        END IF;
        RETURN NEW;
      END $$;
      CREATE TRIGGER apps_secret_rotated BEFORE UPDATE OF client_secret_hash ON apps
        FOR EACH ROW EXECUTE FUNCTION tessera_secret_rotated();

      CREATE FUNCTION tessera_admin_tokens_removed() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF current_setting('tessera.quiet', true) IS DISTINCT FROM 'on'
           AND current_setting('tessera.withdrawn', true) IS DISTINCT FROM 'on' THEN
          PERFORM 1 FROM apps WHERE app_id IN (SELECT app_id FROM removed WHERE kind = 'admin') ORDER BY app_id FOR UPDATE;
          UPDATE apps SET admin_generation = admin_generation + 1
            WHERE app_id IN (SELECT app_id FROM removed WHERE kind = 'admin');
        END IF;
        RETURN NULL;
      END $$;
      CREATE TRIGGER tokens_admin_removed AFTER DELETE ON tokens REFERENCING OLD TABLE AS removed
        FOR EACH STATEMENT EXECUTE FUNCTION tessera_admin_tokens_removed();
    `,
  },
  {
    version: 13,
    sql: `
      -- An id of its own for each event a request records (src/events/log.ts): a batch written
      -- again after a write whose commit is in doubt (its connection lost after the insert was
      -- sent, a statement the client stopped waiting for that the server still ran) skips the
      -- events already stored (ON CONFLICT DO NOTHING), so each is stored once. Null for the events
      -- written with their change, and for those an earlier release writes during an upgrade.
      --
      -- Adding the column rewrites nothing. Building the index reads the whole table, with writes
      -- to it (and, in this transaction, reads) waiting meanwhile: on a large table an operator
      -- builds both beforehand without that wait (docs/deployment.md, "Upgrading"), which the
      -- IF NOT EXISTS then find. An index left invalid by a CONCURRENTLY build that failed would
      -- enforce nothing: it stops the migration, with what to do.
      ALTER TABLE events ADD COLUMN IF NOT EXISTS idempotency_key bytea;
      DO $$
      BEGIN
        IF EXISTS (SELECT 1 FROM pg_index WHERE indexrelid = to_regclass('events_by_idempotency_key') AND NOT indisvalid) THEN
          RAISE EXCEPTION 'the index events_by_idempotency_key is invalid (a CREATE INDEX CONCURRENTLY that failed): DROP INDEX events_by_idempotency_key, then migrate again';
        END IF;
      END $$;
      CREATE UNIQUE INDEX IF NOT EXISTS events_by_idempotency_key ON events (idempotency_key)
        WHERE idempotency_key IS NOT NULL;
    `,
  },
  {
    version: 14,
    sql: `
      -- Each writer of event counts (an EventLog: one per process) and the number of the last batch
      -- of counts it added (src/store/sql/events.ts). A batch adds its counts in the transaction
      -- that raises last_batch to its number, and only if that raises it: a batch written again
      -- after a write whose commit is in doubt is added once. One row per writer, not per batch;
      -- housekeeping removes those not written for a day. An earlier release, during an upgrade,
      -- adds its counts without it, as before.
      CREATE TABLE event_count_writers (
        writer     text   PRIMARY KEY,
        last_batch bigint NOT NULL,
        written_at bigint NOT NULL
      );
    `,
  },
  {
    version: 15,
    sql: `
      -- The attestation debug tokens of an app (src/attestation/debug-tokens.ts), for CI and
      -- emulators: a name and the SHA-256 of the token, which is shown once. Deleting the app
      -- deletes them; revoking one deletes it. A table of its own: a release before it reads none.
      CREATE TABLE attestation_debug_tokens (
        id           text   PRIMARY KEY,
        app_id       text   NOT NULL REFERENCES apps (app_id) ON DELETE CASCADE,
        name         text   NOT NULL,
        token_hash   bytea  NOT NULL UNIQUE,
        created_at   bigint NOT NULL,
        last_used_at bigint
      );

      CREATE INDEX attestation_debug_tokens_by_app ON attestation_debug_tokens (app_id);

      -- The proofs of work accepted (src/attestation/checker.ts), each accepted once on every
      -- instance: its expiry (8 bytes, big-endian UNIX ms) then 16 bytes of its challenge's
      -- signature. Ordered by expiry: housekeeping deletes the expired ones by range, with no other index.
      CREATE TABLE attestation_claims (
        claim bytea PRIMARY KEY
      );

      -- What a platform's attestation of an app is checked against (src/attestation/android.ts):
      -- per app and provider, its settings as JSON (Play Integrity: the package name and the keys
      -- from the Play Console). Never in the configuration, which is read by more and logged in events.
      CREATE TABLE attestation_settings (
        app_id     text   NOT NULL REFERENCES apps (app_id) ON DELETE CASCADE,
        provider   text   NOT NULL,
        settings   text   NOT NULL,
        updated_at bigint NOT NULL,
        PRIMARY KEY (app_id, provider)
      );

      -- The App Attest keys an app's installations attested (src/attestation/apple.ts): the key's id
      -- (the SHA-256 of its public key), the public key (an uncompressed P-256 point) and the
      -- counter of its last assertion. Deleted with the app.
      CREATE TABLE attestation_keys (
        app_id     text   NOT NULL REFERENCES apps (app_id) ON DELETE CASCADE,
        key_id     bytea  NOT NULL,
        public_key bytea  NOT NULL,
        counter    bigint NOT NULL,
        created_at bigint NOT NULL,
        PRIMARY KEY (app_id, key_id)
      );
    `,
  },
  {
    version: 16,
    sql: `
      -- The keys that sign JWT access tokens and status lists (src/jwt/), published in the JWKS from
      -- created_at; the newest key whose signs_from has come signs (a key rolled ahead is published
      -- before it signs). The private key is encrypted (AES-256-GCM under KEY_ENCRYPTION_KEY, never
      -- in the database) and erased once a newer key signs; the row is published until
      -- published_until, when every token it signed has expired. Tables of their own: a release
      -- before them reads none.
      CREATE TABLE jwt_keys (
        kid             text   PRIMARY KEY,
        algorithm       text   NOT NULL CHECK (algorithm IN ('EdDSA', 'ES256')),
        public_jwk      text   NOT NULL,
        private_key     bytea,
        created_at      bigint NOT NULL,
        signs_from      bigint NOT NULL,
        published_until bigint
      );

      CREATE TRIGGER jwt_keys_changed AFTER INSERT OR UPDATE OR DELETE ON jwt_keys
        FOR EACH STATEMENT EXECUTE FUNCTION tessera_keys_changed();

      -- Token Status List indexes (src/jwt/status-lists.ts), reserved by an instance in blocks per
      -- app and kind, so that issuing a JWT writes nothing of its own. A block's app no longer
      -- existing, or an anonymous block reserved at or before the app's anonymous_cutoff, counts as
      -- revoked whole; no foreign key, so that a deleted app's blocks stay until their tokens expire.
      CREATE TABLE status_list_blocks (
        first_index bigint  PRIMARY KEY,
        size        integer NOT NULL,
        app_id      text    NOT NULL,
        kind        text    NOT NULL CHECK (kind IN ('admin', 'anonymous')),
        reserved_at bigint  NOT NULL,
        expires_by  bigint  NOT NULL
      );

      CREATE INDEX status_list_blocks_by_expiry ON status_list_blocks (expires_by);

      -- The next index to reserve (one row).
      CREATE TABLE status_list_next (
        id         integer PRIMARY KEY CHECK (id = 1),
        next_index bigint  NOT NULL
      );
      INSERT INTO status_list_next (id, next_index) VALUES (1, 0);

      -- The indexes of single tokens revoked before their expiry: a JWT admin token's when its row
      -- is deleted (by any release: the trigger), an anonymous JWT's when it is revoked (RFC 7009).
      CREATE TABLE status_list_revocations (
        status_index bigint PRIMARY KEY,
        expires_at   bigint NOT NULL
      );

      CREATE INDEX status_list_revocations_by_expiry ON status_list_revocations (expires_at);

      -- A credential's token format (src/jwt/), when it is not the app's (null).
      ALTER TABLE credentials ADD COLUMN access_token_format text CHECK (access_token_format IN ('opaque', 'jwt'));

      -- A JWT admin token's index in the status lists; null for an opaque token. Adding a column
      -- without a default rewrites nothing.
      ALTER TABLE tokens ADD COLUMN status_index bigint;

      CREATE FUNCTION tessera_token_status_revoked() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO status_list_revocations (status_index, expires_at)
          SELECT status_index, expires_at FROM removed
           WHERE status_index IS NOT NULL AND expires_at > (extract(epoch FROM clock_timestamp()) * 1000)::bigint
          ON CONFLICT (status_index) DO NOTHING;
        RETURN NULL;
      END $$;
      CREATE TRIGGER tokens_status_revoked AFTER DELETE ON tokens REFERENCING OLD TABLE AS removed
        FOR EACH STATEMENT EXECUTE FUNCTION tessera_token_status_revoked();
    `,
  },
  {
    version: 17,
    sql: `
      -- An app's webhooks (src/webhooks/): where its audit events of the chosen types (a JSON array)
      -- are sent, signed with the secret (encrypted under KEY_ENCRYPTION_KEY, as the JWT keys); during
      -- a rotation also with the previous one, until previous_secret_until. Deleted with the app.
      CREATE TABLE webhooks (
        id                    text   PRIMARY KEY,
        app_id                text   NOT NULL REFERENCES apps (app_id) ON DELETE CASCADE,
        url                   text   NOT NULL,
        event_types           jsonb  NOT NULL,
        secret                bytea  NOT NULL,
        previous_secret       bytea,
        previous_secret_until bigint,
        created_at            bigint NOT NULL
      );

      CREATE INDEX webhooks_by_app ON webhooks (app_id);

      -- Each event to send to a webhook, with a copy of the event (sent even if the event is trimmed
      -- first): written with the event, in its transaction, by the trigger below, whatever release
      -- wrote the event. A sender takes a due one by moving next_attempt_at past its attempt (a lease:
      -- an instance that dies mid-send leaves it to be taken again; SKIP LOCKED: instances take
      -- different ones), then records the outcome.
      CREATE TABLE webhook_deliveries (
        id              bigint  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        webhook_id      text    NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
        app_id          text    NOT NULL,
        event_id        bigint  NOT NULL,
        event_type      text    NOT NULL,
        event_at        bigint  NOT NULL,
        principal       text,
        client_address  text,
        details         jsonb   NOT NULL,
        state           text    NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed')),
        attempts        integer NOT NULL DEFAULT 0,
        next_attempt_at bigint  NOT NULL,
        created_at      bigint  NOT NULL,
        last_attempt_at bigint,
        last_status     integer,
        last_error      text,
        last_response   text
      );

      CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE state = 'pending';
      CREATE INDEX webhook_deliveries_by_webhook ON webhook_deliveries (webhook_id, id);

      -- The events that may call for an alert by mail (src/mail/alerts.ts), written with the event by
      -- the trigger below; the mail sender turns them into mails (or drops them), housekeeping drops
      -- those left when no mail server is set.
      CREATE TABLE pending_alerts (
        id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        app_id     text   NOT NULL,
        event_id   bigint NOT NULL,
        event_type text   NOT NULL,
        event_at   bigint NOT NULL,
        principal  text,
        details    jsonb  NOT NULL
      );

      -- Both written with the events, in their statement's transaction, whatever release wrote them.
      CREATE FUNCTION tessera_event_outboxes() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO webhook_deliveries (webhook_id, app_id, event_id, event_type, event_at, principal, client_address, details, next_attempt_at, created_at)
          SELECT webhooks.id, added.app_id, added.id, added.type, added.at, added.principal, added.client_address, added.details, added.at, added.at
            FROM added JOIN webhooks ON webhooks.app_id = added.app_id
           WHERE added.type NOT LIKE 'token.%' AND webhooks.event_types ? added.type
           ORDER BY added.id, webhooks.id;
        INSERT INTO pending_alerts (app_id, event_id, event_type, event_at, principal, details)
          SELECT app_id, id, type, at, principal, details FROM added
           WHERE type IN ('app.secret_exposed', 'app.refusal_burst', 'credential.refused', 'app.secret_rotated', 'credential.created', 'credential.revoked')
           ORDER BY id;
        RETURN NULL;
      END $$;
      CREATE TRIGGER events_outboxes AFTER INSERT ON events REFERENCING NEW TABLE AS added
        FOR EACH STATEMENT EXECUTE FUNCTION tessera_event_outboxes();

      -- Each alert sent, at most once per app, kind and hour (hour: UNIX ms / 3600000), whichever
      -- instance sends it.
      CREATE TABLE alert_notices (
        app_id text   NOT NULL,
        kind   text   NOT NULL,
        hour   bigint NOT NULL,
        PRIMARY KEY (app_id, kind, hour)
      );

      -- The members of an app who turned its alerts off.
      CREATE TABLE alert_opt_outs (
        app_id       text NOT NULL REFERENCES apps (app_id) ON DELETE CASCADE,
        developer_id text NOT NULL REFERENCES developers (id) ON DELETE CASCADE,
        PRIMARY KEY (app_id, developer_id)
      );

      -- Mail to send (src/mail/): the message encrypted under KEY_ENCRYPTION_KEY (it may hold a
      -- one-time link), sent after the commit, retried until sent or given up.
      CREATE TABLE mail_outbox (
        id              bigint  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        kind            text    NOT NULL,
        recipient       text    NOT NULL,
        message         bytea   NOT NULL,
        state           text    NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'sent', 'failed')),
        attempts        integer NOT NULL DEFAULT 0,
        next_attempt_at bigint  NOT NULL,
        created_at      bigint  NOT NULL,
        last_error      text
      );

      CREATE INDEX mail_outbox_due ON mail_outbox (next_attempt_at) WHERE state = 'pending';
      -- What bounds the mail waiting for one address (recipient: the address, also inside the message).
      CREATE INDEX mail_outbox_pending_by_recipient ON mail_outbox (recipient, kind) WHERE state = 'pending';

      -- When a developer confirmed their address by the link mailed at sign-up; null until then.
      ALTER TABLE developers ADD COLUMN email_confirmed_at bigint;
      -- The accounts made before it: the operator made them, or they signed up when there was no mail
      -- to confirm with; their alerts are not withheld for a confirmation nobody could give.
      UPDATE developers SET email_confirmed_at = created_at;
    `,
  },
  {
    version: 18,
    sql: `
      -- Proofs of work accepted, as bits (src/attestation/pow.ts): a challenge made once every
      -- instance runs 0.4.0 carries a serial from a block of 4096 that one instance reserved, and its
      -- bit is set when a proof of it is accepted, so that a burst's claims share a row or two where a
      -- row each scattered them among as many pages. Ids are never given twice (an identity), and a
      -- block is deleted once every challenge of it has expired (expires_at). A proof of an older
      -- challenge is still claimed in attestation_claims.
      CREATE TABLE pow_serial_blocks (
        block      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        claimed    bytea  NOT NULL,
        expires_at bigint NOT NULL
      );

      -- Sets the bits of a block's serials: the ones that were not set yet come back (none if the
      -- block is gone, its challenges expired). One statement, under the row's lock, so that
      -- instances claiming in one block take turns.
      CREATE FUNCTION tessera_claim_serials(p_block bigint, p_bits integer[]) RETURNS integer[] LANGUAGE plpgsql AS $$
      DECLARE
        bits    bytea;
        claimed integer[] := '{}';
        position integer;
      BEGIN
        SELECT b.claimed INTO bits FROM pow_serial_blocks b WHERE b.block = p_block FOR UPDATE;
        IF NOT FOUND THEN
          RETURN claimed;
        END IF;
        FOREACH position IN ARRAY p_bits LOOP
          IF get_bit(bits, position) = 0 THEN
            bits := set_bit(bits, position, 1);
            claimed := claimed || position;
          END IF;
        END LOOP;
        IF cardinality(claimed) > 0 THEN
          UPDATE pow_serial_blocks SET claimed = bits WHERE block = p_block;
        END IF;
        RETURN claimed;
      END $$;
    `,
  },
];
