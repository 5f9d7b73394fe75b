import { finalizedRelease, readSchemaState } from 'tessera-tokens/internal/store/sqlite/schema-state.js';
import { compareReleases, currentBuild } from 'tessera-tokens/internal/release.js';
import {
  migrationRecord,
  RELEASES_RECORDED_FROM,
  SchemaRefused,
  schemaVerdict,
  type Migration,
  type MigrationReport,
} from 'tessera-tokens/internal/store/schema.js';
import type { SqliteDatabase } from 'tessera-tokens/internal/store/sqlite/connection.js';

export interface SqliteMigrateOptions {
  /** Says what would be applied, and applies nothing (`tessera migrate --dry-run`). */
  dryRun?: boolean;
}

/**
 * Applies the migrations this file has not had yet (`SQLITE_MIGRATIONS`, below), after the start-up
 * guard (`schemaVerdict`) said this build may serve on it. The embedded store is upgraded by
 * stopping one release and starting the next: it is finalized for the newest release that opened it.
 */
export function migrate(db: SqliteDatabase, options: SqliteMigrateOptions = {}): MigrationReport {
  const build = currentBuild();
  const migrations = SQLITE_MIGRATIONS;
  // IMMEDIATE takes the write lock first, so processes starting together apply each step once;
  // a dry run only reads.
  const run = db.transaction(() => {
    const before = readSchemaState(db);
    const verdict = schemaVerdict(
      migrations.map((migration) => migration.version),
      before,
      build,
    );
    if ('refused' in verdict) throw new SchemaRefused(verdict.refused);
    const { pending } = verdict;
    if (options.dryRun === true) return { before, pending, applied: [] };
    db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL) STRICT');
    for (const migration of migrations) {
      if (!pending.includes(migration.version)) continue;
      db.exec(migration.sql);
      const record = migration.version < RELEASES_RECORDED_FROM ? { release: null, servesFrom: null } : migrationRecord(build);
      db.prepare(
        migration.version < RELEASES_RECORDED_FROM
          ? 'INSERT INTO schema_migrations (version, applied_at) VALUES (:version, :appliedAt)'
          : 'INSERT INTO schema_migrations (version, applied_at, release, serves_from) VALUES (:version, :appliedAt, :release, :servesFrom)',
      ).run({ version: migration.version, appliedAt: Date.now(), ...(record.release === null ? {} : record) });
    }
    const finalized = finalizedRelease(db);
    if (finalized !== null && compareReleases(finalized, build.version) < 0) {
      db.prepare('UPDATE upgrade_state SET finalized_release = :release, finalized_at = :at WHERE id = 1').run({
        release: build.version,
        at: Date.now(),
      });
    }
    return { before, pending, applied: pending };
  });
  return options.dryRun === true ? run.deferred() : run.immediate();
}

/** Versioned schema; each entry is applied once, in order, in one transaction. Never edit a shipped one. */
export const SQLITE_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    sql: `
      CREATE TABLE apps (
        app_id             TEXT    PRIMARY KEY,
        name               TEXT    NOT NULL,
        app_key            TEXT    NOT NULL,
        client_id          TEXT    NOT NULL UNIQUE,
        client_secret_hash BLOB    NOT NULL,
        admin_id           TEXT    NOT NULL,
        created_at         INTEGER NOT NULL,
        configuration      TEXT    NOT NULL
      ) STRICT;

      CREATE TABLE tokens (
        selector      BLOB    PRIMARY KEY,
        verifier_hash BLOB    NOT NULL,
        app_id        TEXT    NOT NULL,
        kind          TEXT    NOT NULL CHECK (kind IN ('admin', 'anonymous')),
        issued_at     INTEGER NOT NULL,
        expires_at    INTEGER
      ) STRICT, WITHOUT ROWID;

      CREATE INDEX tokens_by_app ON tokens (app_id);
    `,
  },
  {
    version: 2,
    sql: `
      -- Housekeeping finds expired tokens through this; tokens that never expire are not in it.
      CREATE INDEX tokens_by_expiry ON tokens (expires_at) WHERE expires_at IS NOT NULL;

      -- The audit log. A new id is one more than the largest; only deleting an app removes an
      -- app's newest events, so an app's ids only grow and serve as pagination cursors. One index:
      -- every event written costs the token endpoint its insert, so a type filter scans the app's.
      CREATE TABLE events (
        id             INTEGER PRIMARY KEY,
        app_id         TEXT    NOT NULL,
        type           TEXT    NOT NULL,
        at             INTEGER NOT NULL,
        principal      TEXT,
        client_address TEXT,
        details        TEXT    NOT NULL
      ) STRICT;

      CREATE INDEX events_by_app ON events (app_id, id);
    `,
  },
  {
    version: 3,
    sql: `
      -- The keys that sign anonymous tokens. The newest active key signs; a retired key keeps its
      -- row (its id is never reused) without its secret. Ids take two bytes in a token.
      CREATE TABLE keys (
        id         INTEGER PRIMARY KEY AUTOINCREMENT CHECK (id BETWEEN 1 AND 65535),
        secret     BLOB,
        created_at INTEGER NOT NULL,
        retired_at INTEGER
      ) STRICT;

      -- Anonymous tokens issued at or before this instant are refused (the last revoke-all).
      ALTER TABLE apps ADD COLUMN anonymous_cutoff INTEGER;

      -- Anonymous tokens revoked one by one, until they expire. seq only grows (AUTOINCREMENT never
      -- reuses one), so that every instance reads only what is new.
      CREATE TABLE revoked_tokens (
        seq        INTEGER PRIMARY KEY AUTOINCREMENT,
        token_id   BLOB    NOT NULL UNIQUE,
        app_id     TEXT    NOT NULL,
        expires_at INTEGER
      ) STRICT;

      CREATE INDEX revoked_tokens_by_app ON revoked_tokens (app_id);
      CREATE INDEX revoked_tokens_by_expiry ON revoked_tokens (expires_at) WHERE expires_at IS NOT NULL;
    `,
  },
  {
    version: 4,
    sql: `
      -- Events recorded by requests are counted per app and UTC minute (src/events/retention.ts):
      -- anonymous tokens issued and revoked by themselves only so, since anyone with the public
      -- AppID can cause any number of them. principal and reason are '' for none.
      CREATE TABLE event_counts (
        app_id    TEXT    NOT NULL,
        bucket    INTEGER NOT NULL,
        type      TEXT    NOT NULL,
        principal TEXT    NOT NULL,
        reason    TEXT    NOT NULL,
        count     INTEGER NOT NULL,
        PRIMARY KEY (app_id, bucket, type, principal, reason)
      ) STRICT, WITHOUT ROWID;

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
      -- instant (UNIX ms) from which it no longer works. Both null when there is none.
      ALTER TABLE apps ADD COLUMN previous_secret_hash BLOB;
      ALTER TABLE apps ADD COLUMN previous_secret_valid_until INTEGER
        CHECK ((previous_secret_hash IS NULL) = (previous_secret_valid_until IS NULL));
    `,
  },
  {
    version: 6,
    sql: `
      -- Developer accounts (src/developers/). The email is stored normalised (trimmed, lower-case),
      -- the password only as its Argon2id PHC string (null until set through a one-time link).
      -- References are enforced (PRAGMA foreign_keys, connection.ts): deleting a developer or an app
      -- deletes what refers to it.
      CREATE TABLE developers (
        id            TEXT    PRIMARY KEY,
        email         TEXT    NOT NULL UNIQUE,
        password_hash TEXT,
        created_at    INTEGER NOT NULL,
        disabled_at   INTEGER
      ) STRICT;

      -- The portal's sessions: the token's id, and the SHA-256 of its secret. expires_at is the
      -- earlier of the idle and the absolute expiry (src/developers/session.ts).
      CREATE TABLE developer_sessions (
        id           TEXT    PRIMARY KEY,
        secret_hash  BLOB    NOT NULL,
        developer_id TEXT    NOT NULL REFERENCES developers (id) ON DELETE CASCADE,
        created_at   INTEGER NOT NULL,
        last_seen_at INTEGER NOT NULL,
        expires_at   INTEGER NOT NULL
      ) STRICT;

      CREATE INDEX developer_sessions_by_developer ON developer_sessions (developer_id);
      CREATE INDEX developer_sessions_by_expiry ON developer_sessions (expires_at);

      -- One-time links: a password link names its developer; an invitation, its app and address.
      CREATE TABLE one_time_links (
        id           TEXT    PRIMARY KEY,
        secret_hash  BLOB    NOT NULL,
        purpose      TEXT    NOT NULL CHECK (purpose IN ('set_password', 'reset_password', 'invitation')),
        developer_id TEXT    REFERENCES developers (id) ON DELETE CASCADE,
        app_id       TEXT    REFERENCES apps (app_id) ON DELETE CASCADE,
        email        TEXT,
        invited_by   TEXT    REFERENCES developers (id) ON DELETE CASCADE,
        created_at   INTEGER NOT NULL,
        expires_at   INTEGER NOT NULL,
        CHECK (CASE WHEN purpose = 'invitation'
                    THEN developer_id IS NULL AND app_id IS NOT NULL AND email IS NOT NULL
                    ELSE developer_id IS NOT NULL AND app_id IS NULL AND email IS NULL AND invited_by IS NULL END)
      ) STRICT;

      CREATE INDEX one_time_links_by_developer ON one_time_links (developer_id);
      CREATE INDEX one_time_links_by_app ON one_time_links (app_id, email);
      CREATE INDEX one_time_links_by_inviter ON one_time_links (invited_by);
      CREATE INDEX one_time_links_by_expiry ON one_time_links (expires_at);

      -- Who owns and who collaborates on an app: at most one owner each. An app with no owner is
      -- the operator's.
      CREATE TABLE app_members (
        app_id       TEXT    NOT NULL REFERENCES apps (app_id) ON DELETE CASCADE,
        developer_id TEXT    NOT NULL REFERENCES developers (id) ON DELETE CASCADE,
        role         TEXT    NOT NULL CHECK (role IN ('owner', 'collaborator')),
        added_at     INTEGER NOT NULL,
        PRIMARY KEY (app_id, developer_id)
      ) STRICT, WITHOUT ROWID;

      CREATE UNIQUE INDEX app_members_one_owner ON app_members (app_id) WHERE role = 'owner';
      CREATE INDEX app_members_by_developer ON app_members (developer_id);

      -- A developer's account log (src/developers/events.ts), apart from the apps' audit log.
      CREATE TABLE developer_events (
        id             INTEGER PRIMARY KEY,
        developer_id   TEXT    NOT NULL REFERENCES developers (id) ON DELETE CASCADE,
        type           TEXT    NOT NULL,
        at             INTEGER NOT NULL,
        actor          TEXT    NOT NULL CHECK (actor IN ('operator', 'developer')),
        client_address TEXT,
        details        TEXT    NOT NULL
      ) STRICT;

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
        value      TEXT    PRIMARY KEY,
        keep_until INTEGER NOT NULL
      ) STRICT, WITHOUT ROWID;

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
        client_id                   TEXT    PRIMARY KEY,
        app_id                      TEXT    NOT NULL REFERENCES apps (app_id) ON DELETE CASCADE,
        name                        TEXT    NOT NULL,
        scopes                      TEXT    NOT NULL,
        expires_at                  INTEGER,
        allow_from                  TEXT    NOT NULL,
        secret_hash                 BLOB    NOT NULL,
        previous_secret_hash        BLOB,
        previous_secret_valid_until INTEGER,
        created_at                  INTEGER NOT NULL,
        created_by                  TEXT    NOT NULL CHECK (created_by IN ('operator', 'developer', 'admin')),
        created_by_id               TEXT,
        last_used_at                INTEGER,
        CHECK ((previous_secret_hash IS NULL) = (previous_secret_valid_until IS NULL))
      ) STRICT;

      CREATE INDEX credentials_by_app ON credentials (app_id);

      -- A token issued from a credential: its ClientID and the scopes it was issued with (the
      -- credential's, or fewer). Both null for every other token. Revoking the credential finds its
      -- tokens among its app's (tokens_by_app): an index of their own would cost every scoped
      -- token's insert, for a revocation that is rare.
      ALTER TABLE tokens ADD COLUMN client_id TEXT;
      ALTER TABLE tokens ADD COLUMN scopes TEXT;
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
      ALTER TABLE apps ADD COLUMN admin_generation INTEGER NOT NULL DEFAULT 0;
    `,
  },
  {
    version: 11,
    sql: `
      -- The event counts per app and UTC hour, kept by triggers from the counts per minute
      -- (event_counts, which writes never stop adding to), so that a chart of days or hours reads
      -- 24 times fewer rows: 30 days of an app are 720 buckets rather than 43,200. Triggers keep
      -- them also for the counts a process of an earlier release writes during an upgrade. The
      -- hours already counted are summed once, here.
      CREATE TABLE event_counts_hourly (
        app_id    TEXT    NOT NULL,
        bucket    INTEGER NOT NULL,
        type      TEXT    NOT NULL,
        principal TEXT    NOT NULL,
        reason    TEXT    NOT NULL,
        count     INTEGER NOT NULL,
        PRIMARY KEY (app_id, bucket, type, principal, reason)
      ) STRICT, WITHOUT ROWID;

      CREATE INDEX event_counts_hourly_by_bucket ON event_counts_hourly (bucket);

      INSERT INTO event_counts_hourly (app_id, bucket, type, principal, reason, count)
        SELECT app_id, bucket - bucket % 3600000, type, principal, reason, sum(count)
        FROM event_counts GROUP BY 1, 2, 3, 4, 5;

      -- What a count per minute adds (inserted, or added to), added to its hour.
      CREATE TRIGGER event_counts_hourly_insert AFTER INSERT ON event_counts BEGIN
        INSERT INTO event_counts_hourly (app_id, bucket, type, principal, reason, count)
          VALUES (NEW.app_id, NEW.bucket - NEW.bucket % 3600000, NEW.type, NEW.principal, NEW.reason, NEW.count)
          ON CONFLICT (app_id, bucket, type, principal, reason) DO UPDATE SET count = count + excluded.count;
      END;
      CREATE TRIGGER event_counts_hourly_update AFTER UPDATE OF count ON event_counts BEGIN
        INSERT INTO event_counts_hourly (app_id, bucket, type, principal, reason, count)
          VALUES (NEW.app_id, NEW.bucket - NEW.bucket % 3600000, NEW.type, NEW.principal, NEW.reason, NEW.count - OLD.count)
          ON CONFLICT (app_id, bucket, type, principal, reason) DO UPDATE SET count = count + excluded.count;
      END;
    `,
  },
  {
    version: 12,
    sql: `
      -- Which release applied each migration from here on, and the oldest release that may serve on
      -- the schema it made (src/release.ts): later releases' start-up guard reads them.
      ALTER TABLE schema_migrations ADD COLUMN release TEXT;
      ALTER TABLE schema_migrations ADD COLUMN serves_from TEXT;

      -- The instances serving on this file, as each last said (src/upgrade/registry.ts).
      CREATE TABLE instances (
        id           TEXT    PRIMARY KEY,
        release      TEXT    NOT NULL,
        build_commit TEXT    NOT NULL,
        host         TEXT    NOT NULL,
        pid          INTEGER NOT NULL,
        started_at   INTEGER NOT NULL,
        seen_at      INTEGER NOT NULL
      ) STRICT;

      -- One row: the release whose capabilities every instance may use. The embedded store is
      -- upgraded by stopping one release and starting the next, never both serving at once:
      -- migrate() finalizes it for the release that migrated it.
      CREATE TABLE upgrade_state (
        id                INTEGER PRIMARY KEY CHECK (id = 1),
        finalized_release TEXT    NOT NULL,
        finalized_at      INTEGER,
        older_seen_at     INTEGER NOT NULL
      ) STRICT;
      INSERT INTO upgrade_state (id, finalized_release, finalized_at, older_seen_at)
        VALUES (1, '0.1.0', NULL, CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER));
    `,
  },
  {
    version: 13,
    sql: `
      -- An id of its own for each event a request records (src/events/log.ts): a batch written
      -- again after a write that failed without saying whether it committed skips the events
      -- already stored (ON CONFLICT DO NOTHING), so each is stored once. Null for the events written
      -- with their change, and for those an earlier release writes during an upgrade.
      ALTER TABLE events ADD COLUMN idempotency_key BLOB;
      CREATE UNIQUE INDEX events_by_idempotency_key ON events (idempotency_key) WHERE idempotency_key IS NOT NULL;
    `,
  },
  {
    version: 14,
    sql: `
      -- Each writer of event counts (an EventLog: one per process) and the number of the last batch
      -- of counts it added: a batch adds its counts only in the transaction that raises last_batch
      -- to its number, so a batch written again after a write that failed without saying whether it
      -- committed is added once. Housekeeping removes the writers not written for a day.
      CREATE TABLE event_count_writers (
        writer     TEXT    PRIMARY KEY,
        last_batch INTEGER NOT NULL,
        written_at INTEGER NOT NULL
      ) STRICT;
    `,
  },
  {
    version: 15,
    sql: `
      -- The attestation debug tokens of an app (src/attestation/debug-tokens.ts), for CI and
      -- emulators: a name and the SHA-256 of the token, which is shown once. Deleting the app
      -- deletes them; revoking one deletes it.
      CREATE TABLE attestation_debug_tokens (
        id           TEXT    PRIMARY KEY,
        app_id       TEXT    NOT NULL REFERENCES apps (app_id) ON DELETE CASCADE,
        name         TEXT    NOT NULL,
        token_hash   BLOB    NOT NULL UNIQUE,
        created_at   INTEGER NOT NULL,
        last_used_at INTEGER
      ) STRICT;

      CREATE INDEX attestation_debug_tokens_by_app ON attestation_debug_tokens (app_id);

      -- The proofs of work accepted (src/attestation/checker.ts), each accepted once on every
      -- instance: its expiry (8 bytes, big-endian UNIX ms) then 16 bytes of its challenge's
      -- signature. Ordered by expiry, so that a burst's claims go to the last pages, and housekeeping
      -- deletes the expired ones by range, with no other index.
      CREATE TABLE attestation_claims (
        claim BLOB PRIMARY KEY
      ) STRICT, WITHOUT ROWID;

      -- What a platform's attestation of an app is checked against (src/attestation/android.ts):
      -- per app and provider, its settings as JSON (Play Integrity: the package name and the keys
      -- from the Play Console). Never in the configuration, which is read by more and logged in events.
      CREATE TABLE attestation_settings (
        app_id     TEXT    NOT NULL REFERENCES apps (app_id) ON DELETE CASCADE,
        provider   TEXT    NOT NULL,
        settings   TEXT    NOT NULL,
        updated_at INTEGER NOT NULL,
        PRIMARY KEY (app_id, provider)
      ) STRICT;

      -- The App Attest keys an app's installations attested (src/attestation/apple.ts): the key's id
      -- (the SHA-256 of its public key), the public key (an uncompressed P-256 point) and the
      -- counter of its last assertion. Deleted with the app.
      CREATE TABLE attestation_keys (
        app_id     TEXT    NOT NULL REFERENCES apps (app_id) ON DELETE CASCADE,
        key_id     BLOB    NOT NULL,
        public_key BLOB    NOT NULL,
        counter    INTEGER NOT NULL,
        created_at INTEGER NOT NULL,
        PRIMARY KEY (app_id, key_id)
      ) STRICT, WITHOUT ROWID;
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
        kid             TEXT    PRIMARY KEY,
        algorithm       TEXT    NOT NULL CHECK (algorithm IN ('EdDSA', 'ES256')),
        public_jwk      TEXT    NOT NULL,
        private_key     BLOB,
        created_at      INTEGER NOT NULL,
        signs_from      INTEGER NOT NULL,
        published_until INTEGER
      ) STRICT;

      -- Token Status List indexes (src/jwt/status-lists.ts), reserved by an instance in blocks per
      -- app and kind, so that issuing a JWT writes nothing of its own. A block's app no longer
      -- existing, or an anonymous block reserved at or before the app's anonymous_cutoff, counts as
      -- revoked whole; no foreign key, so that a deleted app's blocks stay until their tokens expire.
      CREATE TABLE status_list_blocks (
        first_index INTEGER PRIMARY KEY,
        size        INTEGER NOT NULL,
        app_id      TEXT    NOT NULL,
        kind        TEXT    NOT NULL CHECK (kind IN ('admin', 'anonymous')),
        reserved_at INTEGER NOT NULL,
        expires_by  INTEGER NOT NULL
      ) STRICT;

      CREATE INDEX status_list_blocks_by_expiry ON status_list_blocks (expires_by);

      -- The next index to reserve (one row).
      CREATE TABLE status_list_next (
        id         INTEGER PRIMARY KEY CHECK (id = 1),
        next_index INTEGER NOT NULL
      ) STRICT;
      INSERT INTO status_list_next (id, next_index) VALUES (1, 0);

      -- The indexes of single tokens revoked before their expiry: a JWT admin token's when its row
      -- is deleted (by any release: the trigger), an anonymous JWT's when it is revoked (RFC 7009).
      CREATE TABLE status_list_revocations (
        status_index INTEGER PRIMARY KEY,
        expires_at   INTEGER NOT NULL
      ) STRICT;

      CREATE INDEX status_list_revocations_by_expiry ON status_list_revocations (expires_at);

      -- A credential's token format (src/jwt/), when it is not the app's (null).
      ALTER TABLE credentials ADD COLUMN access_token_format TEXT CHECK (access_token_format IN ('opaque', 'jwt'));

      -- A JWT admin token's index in the status lists; null for an opaque token.
      ALTER TABLE tokens ADD COLUMN status_index INTEGER;

      CREATE TRIGGER tokens_status_revoked AFTER DELETE ON tokens
        WHEN OLD.status_index IS NOT NULL AND OLD.expires_at > CAST(unixepoch('subsec') * 1000 AS INTEGER)
      BEGIN
        INSERT INTO status_list_revocations (status_index, expires_at) VALUES (OLD.status_index, OLD.expires_at)
          ON CONFLICT (status_index) DO NOTHING;
      END;
    `,
  },
  {
    version: 17,
    sql: `
      -- An app's webhooks (src/webhooks/): where its audit events of the chosen types (a JSON array)
      -- are sent, signed with the secret (encrypted under KEY_ENCRYPTION_KEY, as the JWT keys); during
      -- a rotation also with the previous one, until previous_secret_until. Deleted with the app.
      CREATE TABLE webhooks (
        id                    TEXT    PRIMARY KEY,
        app_id                TEXT    NOT NULL REFERENCES apps (app_id) ON DELETE CASCADE,
        url                   TEXT    NOT NULL,
        event_types           TEXT    NOT NULL,
        secret                BLOB    NOT NULL,
        previous_secret       BLOB,
        previous_secret_until INTEGER,
        created_at            INTEGER NOT NULL
      ) STRICT;

      CREATE INDEX webhooks_by_app ON webhooks (app_id);

      -- Each event to send to a webhook, with a copy of the event (sent even if the event is trimmed
      -- first): written with the event, in its transaction, by the trigger below, whatever release
      -- wrote the event. A sender takes a due one by moving next_attempt_at past its attempt (a lease:
      -- an instance that dies mid-send leaves it to be taken again), then records the outcome.
      CREATE TABLE webhook_deliveries (
        id              INTEGER PRIMARY KEY,
        webhook_id      TEXT    NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
        app_id          TEXT    NOT NULL,
        event_id        INTEGER NOT NULL,
        event_type      TEXT    NOT NULL,
        event_at        INTEGER NOT NULL,
        principal       TEXT,
        client_address  TEXT,
        details         TEXT    NOT NULL,
        state           TEXT    NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed')),
        attempts        INTEGER NOT NULL DEFAULT 0,
        next_attempt_at INTEGER NOT NULL,
        created_at      INTEGER NOT NULL,
        last_attempt_at INTEGER,
        last_status     INTEGER,
        last_error      TEXT,
        last_response   TEXT
      ) STRICT;

      CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE state = 'pending';
      CREATE INDEX webhook_deliveries_by_webhook ON webhook_deliveries (webhook_id, id);

      CREATE TRIGGER events_webhook_deliveries AFTER INSERT ON events
        WHEN NEW.type NOT LIKE 'token.%'
      BEGIN
        INSERT INTO webhook_deliveries (webhook_id, app_id, event_id, event_type, event_at, principal, client_address, details, next_attempt_at, created_at)
          SELECT webhooks.id, NEW.app_id, NEW.id, NEW.type, NEW.at, NEW.principal, NEW.client_address, NEW.details, NEW.at, NEW.at
            FROM webhooks WHERE webhooks.app_id = NEW.app_id AND EXISTS (SELECT 1 FROM json_each(webhooks.event_types) WHERE value = NEW.type);
      END;

      -- The events that may call for an alert by mail (src/mail/alerts.ts), written with the event by
      -- the trigger below; the mail sender turns them into mails (or drops them), housekeeping drops
      -- those left when no mail server is set.
      CREATE TABLE pending_alerts (
        id         INTEGER PRIMARY KEY,
        app_id     TEXT    NOT NULL,
        event_id   INTEGER NOT NULL,
        event_type TEXT    NOT NULL,
        event_at   INTEGER NOT NULL,
        principal  TEXT,
        details    TEXT    NOT NULL
      ) STRICT;

      CREATE TRIGGER events_pending_alerts AFTER INSERT ON events
        WHEN NEW.type IN ('app.secret_exposed', 'app.refusal_burst', 'credential.refused', 'app.secret_rotated', 'credential.created', 'credential.revoked')
      BEGIN
        INSERT INTO pending_alerts (app_id, event_id, event_type, event_at, principal, details)
          VALUES (NEW.app_id, NEW.id, NEW.type, NEW.at, NEW.principal, NEW.details);
      END;

      -- Each alert sent, at most once per app, kind and hour (hour: UNIX ms / 3600000), whichever
      -- instance sends it.
      CREATE TABLE alert_notices (
        app_id TEXT    NOT NULL,
        kind   TEXT    NOT NULL,
        hour   INTEGER NOT NULL,
        PRIMARY KEY (app_id, kind, hour)
      ) STRICT, WITHOUT ROWID;

      -- The members of an app who turned its alerts off.
      CREATE TABLE alert_opt_outs (
        app_id       TEXT NOT NULL REFERENCES apps (app_id) ON DELETE CASCADE,
        developer_id TEXT NOT NULL REFERENCES developers (id) ON DELETE CASCADE,
        PRIMARY KEY (app_id, developer_id)
      ) STRICT, WITHOUT ROWID;

      -- Mail to send (src/mail/): the message encrypted under KEY_ENCRYPTION_KEY (it may hold a
      -- one-time link), sent after the commit, retried until sent or given up.
      CREATE TABLE mail_outbox (
        id              INTEGER PRIMARY KEY,
        kind            TEXT    NOT NULL,
        recipient       TEXT    NOT NULL,
        message         BLOB    NOT NULL,
        state           TEXT    NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'sent', 'failed')),
        attempts        INTEGER NOT NULL DEFAULT 0,
        next_attempt_at INTEGER NOT NULL,
        created_at      INTEGER NOT NULL,
        last_error      TEXT
      ) STRICT;

      CREATE INDEX mail_outbox_due ON mail_outbox (next_attempt_at) WHERE state = 'pending';
      -- What bounds the mail waiting for one address (recipient: the address, also inside the message).
      CREATE INDEX mail_outbox_pending_by_recipient ON mail_outbox (recipient, kind) WHERE state = 'pending';

      -- When a developer confirmed their address by the link mailed at sign-up; null until then.
      ALTER TABLE developers ADD COLUMN email_confirmed_at INTEGER;
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
      -- row each scattered them among as many pages. Ids are never given twice (AUTOINCREMENT), and a
      -- block is deleted once every challenge of it has expired (expires_at). A proof of an older
      -- challenge is still claimed in attestation_claims.
      CREATE TABLE pow_serial_blocks (
        block      INTEGER PRIMARY KEY AUTOINCREMENT,
        claimed    BLOB    NOT NULL,
        expires_at INTEGER NOT NULL
      ) STRICT;
    `,
  },
];
