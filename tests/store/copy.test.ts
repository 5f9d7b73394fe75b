import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import Database from 'libsql';
import { generateKeySecret } from 'tessera-tokens/internal/signing-keys/key.js';
import { SERIALS_PER_BLOCK } from '../../src/attestation/store.js';
import { copyStore } from '../../src/store/copy.js';
import { openStore } from '../../src/store/open.js';
import type { Store } from '../../src/store/store.js';
import { makeApp, makeEvent, makeToken, T0 } from '../helpers/fixtures.js';
import { createPostgresDatabase } from '../helpers/store.js';

// `copyStore` itself: the counters of the copy go on past what the source's counters gave, not only
// past the rows it still holds (a revocation removed by housekeeping keeps its seq given), so that
// no instance ever reads a seq twice; and the refusals that need no process.

const revocation = (appId: string, expiresAt: number | null) => ({ id: randomBytes(16).toString('latin1'), appId, expiresAt });

async function seqs(store: Store): Promise<number[]> {
  return (await store.revokedTokens.since(0, 100)).map((row) => row.seq);
}

describe('copyStore: counters and refusals', () => {
  let dir: string;
  let postgres: Awaited<ReturnType<typeof createPostgresDatabase>>;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tessera-copy-'));
    postgres = await createPostgresDatabase();
  });
  after(async () => {
    await postgres?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('sets each counter past the last value the source gave, SQLite to PostgreSQL and back', async () => {
    const source = join(dir, 'source.db');
    const store = await openStore(source);
    const app = makeApp();
    await store.apps.insert(app);
    for (const expiresAt of [null, null, T0]) await store.revokedTokens.add(revocation(app.appId, expiresAt));
    assert.equal(await store.revokedTokens.deleteExpired(T0 + 1, 10), 1, 'seq 3 is removed, but was given');
    await store.signingKeys.add(generateKeySecret(), T0);
    // Two blocks of proof-of-work serials, the newest gone: the bits claimed mean the same on either store.
    const kept = await store.attestation.reserveSerials(T0 + 3_600_000);
    assert.equal(await store.attestation.reserveSerials(T0), kept + 1);
    assert.equal(await store.attestation.deleteExpiredSerials(T0, 10), 1);
    for (const bit of [0, 9, 4095]) assert.equal(await store.attestation.claimSerial(kept * SERIALS_PER_BLOCK + bit), true);
    await store.close();

    const result = await copyStore(source, postgres.databaseUrl, { batchSize: 1 });
    assert.equal(result.rows, 1 + 2 + 2 + 1 + 1, 'the app, two revocations, two keys, the next status list index, a block of serials');
    const onPostgres = await openStore(postgres.databaseUrl);
    try {
      assert.deepEqual(await seqs(onPostgres), [1, 2]);
      await onPostgres.revokedTokens.add(revocation(app.appId, null));
      assert.deepEqual(await seqs(onPostgres), [1, 2, 4]);
      assert.equal((await onPostgres.signingKeys.add(generateKeySecret(), T0)).id, 3);
      assert.equal(await onPostgres.attestation.reserveSerials(T0 + 3_600_000), kept + 2, 'past the block given and deleted');
      for (const bit of [0, 9, 4095]) assert.equal(await onPostgres.attestation.claimSerial(kept * SERIALS_PER_BLOCK + bit), undefined);
      assert.equal(await onPostgres.attestation.claimSerial(kept * SERIALS_PER_BLOCK + 8), true);
    } finally {
      await onPostgres.close();
    }

    const back = join(dir, 'back.db');
    const progress: string[] = [];
    await copyStore(postgres.databaseUrl, `sqlite:${back}`, {
      batchSize: 2,
      onProgress: (step) => progress.push(`${step.table} ${step.done}/${step.total}`),
    });
    assert.ok(
      progress.includes('revoked_tokens 0/3') && progress.includes('revoked_tokens 2/3') && progress.includes('revoked_tokens 3/3'),
      progress.join(', '),
    );
    const db = new Database(back);
    db.prepare('DELETE FROM revoked_tokens WHERE seq = 4').run();
    db.close();
    const onSqlite = await openStore(back);
    try {
      await onSqlite.revokedTokens.add(revocation(app.appId, null));
      assert.deepEqual(await seqs(onSqlite), [1, 2, 5]);
      assert.equal((await onSqlite.signingKeys.add(generateKeySecret(), T0)).id, 4);
      for (const bit of [0, 8, 9, 4095]) assert.equal(await onSqlite.attestation.claimSerial(kept * SERIALS_PER_BLOCK + bit), undefined);
      assert.equal(await onSqlite.attestation.claimSerial(kept * SERIALS_PER_BLOCK + 10), true);
      assert.equal(await onSqlite.attestation.reserveSerials(T0 + 3_600_000), kept + 3);
    } finally {
      await onSqlite.close();
    }
  });

  it('fails when the target does not end equal to the source: a row count, or a sampled row', async () => {
    const source = join(dir, 'verified.db');
    const store = await openStore(source);
    const app = makeApp();
    await store.apps.insert(app);
    await store.events.append([makeEvent(app.appId), makeEvent(app.appId)]);
    for (let i = 0; i < 5; i++) await store.tokens.insert(makeToken(app.appId, { kind: 'admin' }), 0);
    await store.close();

    // Targets that change what they are given, as a faulty disk or driver would.
    const tampered = async (name: string, trigger: string) => {
      const path = join(dir, name);
      await (await openStore(path)).close();
      const raw = new Database(path);
      raw.exec(trigger);
      raw.close();
      return path;
    };
    const lostEvent = await tampered(
      'lost-event.db',
      'CREATE TRIGGER lose AFTER INSERT ON events WHEN NEW.id = 2 BEGIN DELETE FROM events WHERE id = 2; END',
    );
    await assert.rejects(copyStore(source, lostEvent), /does not match the source: events: 2 rows in the source, 1 in the target/);
    const changedToken = await tampered(
      'changed-token.db',
      "CREATE TRIGGER change AFTER INSERT ON tokens BEGIN UPDATE tokens SET verifier_hash = x'00' WHERE selector = NEW.selector; END",
    );
    await assert.rejects(copyStore(source, changedToken), /does not match the source: tokens: a row differs/);
  });

  it('refuses to copy a store onto itself, and a source that is not a Tessera store', async () => {
    const path = join(dir, 'self.db');
    await (await openStore(path)).close();
    await assert.rejects(copyStore(path, `sqlite:${path}`), { code: 'CONFLICT', message: /the same store/ });
    const link = join(dir, 'link.db');
    symlinkSync(path, link);
    await assert.rejects(copyStore(path, link), { code: 'CONFLICT', message: /the same store/ }, 'through a symbolic link');
    const other = join(dir, 'other.db');
    new Database(other).close();
    await assert.rejects(copyStore(other, join(dir, 'new.db')), /is not a Tessera store/);
  });

  it('warns when the SQLite source seems in use (a server on it), and copies all the same', async () => {
    const path = join(dir, 'busy.db');
    const open = await openStore(path);
    try {
      await open.apps.insert(makeApp());
      const warnings: string[] = [];
      await copyStore(path, join(dir, 'busy-copy.db'), { onWarning: (message) => warnings.push(message) });
      assert.equal(warnings.length, 1);
      assert.match(warnings[0]!, /seems to be in use.*stop the server before copying/);
    } finally {
      await open.close();
    }
    const warnings: string[] = [];
    await copyStore(path, join(dir, 'quiet-copy.db'), { onWarning: (message) => warnings.push(message) });
    assert.deepEqual(warnings, [], 'closed cleanly: no warning');
  });

  it('says which side cannot be opened, and never prints a password, whether after the user name or as a parameter', async () => {
    const path = join(dir, 'source.db');
    await (await openStore(path)).close();
    // Nothing listens on port 1.
    for (const url of [
      'postgres://tessera:pw-in-userinfo@127.0.0.1:1/x',
      'postgresql://tessera@127.0.0.1:1/x?password=pw-as-parameter&sslmode=disable',
    ]) {
      const error = (await copyStore(path, url).catch((caught: unknown) => caught)) as Error;
      assert.match(error.message, /^the target, postgres(ql)?:\/\/tessera(:\*\*\*)?@127\.0\.0\.1:1\/x/, error.message);
      assert.ok(!error.message.includes('pw-'), error.message);
    }
  });
});
