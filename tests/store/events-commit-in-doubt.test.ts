import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { systemClock } from 'tessera-tokens/internal/clock.js';
import { EVENT_RETRY_DELAY_MS, EventLog } from '../../src/events/log.js';
import { openPostgresStore } from '../../src/store/postgres/store.js';
import type { Store } from '../../src/store/store.js';
import { OPERATOR } from '../../src/request-context.js';
import { CommitInDoubtProxy } from '../helpers/commit-in-doubt-proxy.js';
import { createPostgresDatabase } from '../helpers/store.js';

// A write of audit events whose commit is in doubt, on the real PostgreSQL: the insert commits, and
// the connection is lost before its answer arrives (a proxy cuts it once the server said the
// transaction is over). The log cannot tell that it committed, keeps the batch and writes it again:
// each event is stored once, by its idempotency key. An insert of an earlier release, which knows
// no key, still works beside it. The same for a batch of counts: added once, by its writer's batch
// number (event_count_writers).

describe('audit events whose commit is in doubt (PostgreSQL)', () => {
  let database: { databaseUrl: string; drop: () => Promise<void> };
  let proxy: CommitInDoubtProxy;
  let store: Store;
  let observer: pg.Client;

  before(async () => {
    database = await createPostgresDatabase();
    proxy = CommitInDoubtProxy.toDatabase(database.databaseUrl);
    await proxy.start();
    store = await openPostgresStore(proxy.urlFor(database.databaseUrl));
    observer = new pg.Client({ connectionString: database.databaseUrl });
    await observer.connect();
  });

  after(async () => {
    await store.close();
    await observer.end();
    await proxy.stop();
    await database.drop();
  });

  const stored = async (appId: string) =>
    (
      await observer.query<{ n: string | null; keyed: boolean }>(
        "SELECT details->>'n' AS n, idempotency_key IS NOT NULL AS keyed FROM events WHERE app_id = $1 ORDER BY id",
        [appId],
      )
    ).rows;

  it('stores each event of a batch written again after its connection was lost past the commit once, and says the outage once', async () => {
    const warnings: string[] = [];
    const notices: string[] = [];
    const log = new EventLog(store.events, systemClock, {
      onWarning: (message) => warnings.push(message),
      onNotice: (message) => notices.push(message),
    });
    const appId = 'in-doubt';
    for (let n = 1; n <= 3; n++) log.record('token.refused', appId, OPERATOR, 'admin', { reason: 'invalid_client', n });
    proxy.loseAnswerAfterCommit(/^INSERT 0 3$/);
    await log.flush();
    assert.equal(proxy.cuts, 1, 'the insert’s answer was lost');
    assert.equal(log.unwritten, 3, 'kept: the log cannot tell that they were stored');
    assert.deepEqual(
      (await stored(appId)).map((row) => row.n),
      ['1', '2', '3'],
      'committed, though its writer never heard so',
    );
    assert.equal(warnings.length, 1, warnings.join(' | '));
    assert.match(warnings[0]!, /^audit events cannot be written: Connection terminated/);

    log.record('token.refused', appId, OPERATOR, 'admin', { reason: 'invalid_client', n: 4 });
    // Written again by the retry timer, with the one recorded meanwhile: events, then counts, then the notice.
    const deadline = Date.now() + EVENT_RETRY_DELAY_MS * 5;
    while (notices.length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(log.unwritten, 0);
    const rows = await stored(appId);
    assert.deepEqual(
      rows.map((row) => row.n),
      ['1', '2', '3', '4'],
      'each once',
    );
    assert.ok(rows.every((row) => row.keyed));
    assert.equal(warnings.length, 1, warnings.join(' | '));
    assert.equal(notices.length, 1, notices.join(' | '));
    assert.match(
      notices[0]!,
      /^audit events are written again, after \d+ s in which 1 writes failed: 4 events, and the counts of 4 events, kept meanwhile are written; none lost$/,
    );
    await log.close();
  });

  it('adds the counts of a batch written again after its connection was lost past the commit once', async () => {
    const warnings: string[] = [];
    const notices: string[] = [];
    const log = new EventLog(store.events, systemClock, {
      onWarning: (message) => warnings.push(message),
      onNotice: (message) => notices.push(message),
    });
    const appId = 'counts-in-doubt';
    const counted = async () =>
      Object.fromEntries(
        await Promise.all(
          ['event_counts', 'event_counts_hourly'].map(async (table) => [
            table,
            (
              await observer.query<{ type: string; count: string }>(
                `SELECT type, sum(count)::text AS count FROM ${table} WHERE app_id = $1 GROUP BY type ORDER BY type`,
                [appId],
              )
            ).rows.map((row) => `${row.type} ${row.count}`),
          ]),
        ),
      );
    // Counted only, no rows (anonymous tokens issued, and revoked by themselves): one batch of two counts.
    for (let i = 0; i < 5; i++) log.record('token.issued', appId, OPERATOR, 'anonymous');
    for (let i = 0; i < 2; i++) log.record('token.revoked', appId, OPERATOR, 'anonymous');
    const cutsBefore = proxy.cuts;
    proxy.loseAnswerAfterCommit(/^INSERT 0 2$/);
    await log.flush();
    assert.equal(proxy.cuts, cutsBefore + 1, 'the answer to the commit of the counts was lost');
    const once = { event_counts: ['token.issued 5', 'token.revoked 2'], event_counts_hourly: ['token.issued 5', 'token.revoked 2'] };
    assert.deepEqual(await counted(), once, 'committed, though its writer never heard so');
    assert.equal(warnings.length, 1, warnings.join(' | '));
    assert.match(warnings[0]!, /^audit events cannot be written: Connection terminated/);

    log.record('token.issued', appId, OPERATOR, 'anonymous');
    // Written again by the retry timer: the batch in doubt, then the count recorded meanwhile.
    const deadline = Date.now() + EVENT_RETRY_DELAY_MS * 5;
    while (notices.length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    assert.deepEqual(
      await counted(),
      { event_counts: ['token.issued 6', 'token.revoked 2'], event_counts_hourly: ['token.issued 6', 'token.revoked 2'] },
      'the batch in doubt added once',
    );
    assert.equal(warnings.length, 1, warnings.join(' | '));
    assert.equal(notices.length, 1, notices.join(' | '));
    assert.match(
      notices[0]!,
      /^audit events are written again, after \d+ s in which 1 writes failed: 0 events, and the counts of 8 events, kept meanwhile are written; none lost$/,
    );
    await log.close();
  });

  it('takes the inserts of an earlier release, which know no key, as before: each row stored', async () => {
    const insert = () =>
      observer.query(
        "INSERT INTO events (app_id, type, at, principal, client_address, details) VALUES ('older-release', 'token.issued', 1, 'admin', NULL, '{}')",
      );
    await insert();
    await insert();
    assert.deepEqual(await stored('older-release'), [
      { n: null, keyed: false },
      { n: null, keyed: false },
    ]);
  });
});
