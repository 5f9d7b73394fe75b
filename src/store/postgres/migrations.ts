/** Versioned schema; each entry is applied once, in order, in one transaction. Never edit a shipped one. */
export const POSTGRES_MIGRATIONS: readonly { version: number; sql: string }[] = [
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
];
