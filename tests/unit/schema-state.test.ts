import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type pg from 'pg';
import { migrate } from '../../src/store/postgres/migrations.js';
import { readSchemaState } from 'tessera-tokens/internal/store/postgres/schema-state.js';

/** A pool whose every query fails as `schema_migrations`'s read would, recording what it was sent. */
function failingPool(error: Error & { code?: string }): { pool: pg.Pool; sent: string[] } {
  const sent: string[] = [];
  const pool = {
    query: (text: string) => {
      sent.push(text);
      return Promise.reject(error);
    },
  };
  return { pool: pool as unknown as pg.Pool, sent };
}

function pgError(code: string, message: string): Error & { code: string } {
  return Object.assign(new Error(message), { code });
}

describe("reading PostgreSQL's schema_migrations", () => {
  it('takes a missing table (42P01) for a new database', async () => {
    const { pool } = failingPool(pgError('42P01', 'relation "schema_migrations" does not exist'));
    assert.deepEqual(await readSchemaState(pool), { applied: [], finalizedRelease: null });
  });

  it('names the grant a role that may not read it (42501) lacks, and migrates nothing', async () => {
    const denied = pgError('42501', 'permission denied for table schema_migrations');
    const { pool, sent } = failingPool(denied);
    await assert.rejects(migrate(pool), (error: Error) => {
      assert.match(error.message, /may not read schema_migrations \(permission denied for table schema_migrations\)/);
      assert.match(error.message, /Grant it SELECT on schema_migrations/);
      assert.equal(error.cause, denied);
      return true;
    });
    assert.deepEqual(sent, ['SELECT * FROM schema_migrations'], 'nothing was created or applied');
  });

  it('throws any other error as it is, rather than taking the database for a new one', async () => {
    for (const error of [
      pgError('57014', 'canceling statement due to statement timeout'),
      pgError('XX000', 'internal'),
      new Error('gone'),
    ]) {
      const { pool, sent } = failingPool(error);
      await assert.rejects(migrate(pool), (thrown) => thrown === error);
      assert.deepEqual(sent, ['SELECT * FROM schema_migrations']);
    }
  });
});
