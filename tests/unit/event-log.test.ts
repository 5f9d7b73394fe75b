import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { serviceUnavailable } from 'tessera-tokens/internal/error-catalogue.js';
import type { EventCount } from '../../src/events/counts.js';
import type { KeyedAuditEvent, NewAuditEvent } from '../../src/events/event.js';
import { EVENT_RETRY_DELAY_MS, EventLog, type LossReason, type LostPart } from '../../src/events/log.js';
import type { CountBatch, EventStore } from '../../src/events/store.js';
import { NO_METRICS, type Metrics } from '../../src/metrics/port.js';
import { loadPrometheusMetrics } from '../../src/prometheus/load.js';
import { OPERATOR } from '../../src/request-context.js';
import { FakeClock } from '../helpers/clock.js';
import { parsePrometheusText, Scrape } from '../helpers/prometheus.js';

// The audit log's writes when the store fails: an outage (503) loses nothing and is said twice (when
// it starts, when the events are written again), never per attempt; what is lost (a write refused,
// the buffer's bound, a stop during an outage) is said and counted. Over a store whose writes fail
// as told, with real timers.

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A store that keeps what it is given, failing each write with what `failures` holds next (or, while
 * `down` is set, with a 503). `committedThenLost`: the next append stores its events, then fails as
 * a connection lost after the commit would; `countsCommittedThenLost`, the same for the next batch
 * of counts. Stores each idempotency key once, and adds a writer's batch of counts only if its
 * number is past the last one added, as the SQL stores do.
 */
function flakyStore(failures: (Error | null)[] = []) {
  const events: (NewAuditEvent | KeyedAuditEvent)[] = [];
  const counts: EventCount[] = [];
  const keys = new Set<string>();
  const state = { down: false, committedThenLost: false, countsCommittedThenLost: false, appends: 0 };
  /** Every write of counts tried: its batch's number, and its counts as `type reason count`. */
  const countWrites: { number: number | undefined; counts: string[] }[] = [];
  const lastBatches = new Map<string, number>();
  const store = {
    append: async (batch: (NewAuditEvent | KeyedAuditEvent)[]) => {
      state.appends++;
      const failure = failures.shift() ?? null;
      if (failure !== null) throw failure;
      if (state.down) throw serviceUnavailable();
      for (const event of batch) {
        const key = 'idempotencyKey' in event ? event.idempotencyKey.toString('hex') : undefined;
        if (key !== undefined && keys.has(key)) continue;
        if (key !== undefined) keys.add(key);
        events.push(event);
      }
      if (state.committedThenLost) {
        state.committedThenLost = false;
        throw serviceUnavailable();
      }
    },
    addCounts: async (batch: EventCount[], id?: CountBatch) => {
      countWrites.push({ number: id?.number, counts: batch.map((count) => `${count.type} ${count.reason} ${count.count}`) });
      if (state.down) throw serviceUnavailable();
      if (id === undefined || (lastBatches.get(id.writer) ?? 0) < id.number) {
        if (id !== undefined) lastBatches.set(id.writer, id.number);
        counts.push(...batch.map((count) => ({ ...count })));
      }
      if (state.countsCommittedThenLost) {
        state.countsCommittedThenLost = false;
        throw serviceUnavailable();
      }
    },
  } as unknown as EventStore;
  return { store, events, counts, countWrites, lastBatches, state };
}

/** What the log says and counts, as lines. */
function listener() {
  const warnings: string[] = [];
  const notices: string[] = [];
  const lost: string[] = [];
  let failures = 0;
  const metrics: Metrics = {
    ...NO_METRICS,
    eventWriteFailed: () => failures++,
    eventsLost: (part: LostPart, reason: LossReason, count: number) => lost.push(`${part} ${reason} ${count}`),
  };
  return {
    warnings,
    notices,
    lost,
    failures: () => failures,
    options: { onWarning: (message: string) => warnings.push(message), onNotice: (message: string) => notices.push(message), metrics },
  };
}

const refusal = (log: EventLog, n: number) => log.record('token.refused', 'app1', OPERATOR, 'admin', { reason: 'invalid_client', n });

describe('the event log when the store fails', () => {
  it('writes again, in order, the events whose write met an unreachable database, with those recorded meanwhile: one warning, one notice', async () => {
    const { store, events, counts, state } = flakyStore();
    const told = listener();
    const log = new EventLog(store, new FakeClock(), told.options);
    refusal(log, 1);
    refusal(log, 2);
    state.down = true;
    await log.flush();
    assert.equal(log.unwritten, 2, 'kept');
    refusal(log, 3);
    await log.flush(); // fails again: all three kept, in order
    assert.equal(log.unwritten, 3);
    await sleep(EVENT_RETRY_DELAY_MS * 2.5); // tried again, and failed, by the retry timer
    for (let n = 4; n <= 50; n++) refusal(log, n);
    await sleep(100);
    assert.ok(state.appends <= 6, `tried once a second while the database is away, not at every flush: ${state.appends} appends`);
    assert.deepEqual(told.warnings.length, 1, `one warning for the outage: ${told.warnings.join(' | ')}`);
    assert.match(told.warnings[0]!, /^audit events cannot be written: The service cannot reach its database.*tried again every 1 s/);
    assert.deepEqual(told.notices, []);

    state.down = false;
    await sleep(EVENT_RETRY_DELAY_MS + 200);
    assert.deepEqual(
      events.map((event) => event.details.n),
      Array.from({ length: 50 }, (_, i) => i + 1),
    );
    assert.equal(log.unwritten, 0);
    assert.equal(
      counts.reduce((sum, count) => sum + count.count, 0),
      50,
    );
    assert.equal(told.warnings.length, 1, told.warnings.join(' | '));
    assert.equal(told.notices.length, 1, told.notices.join(' | '));
    assert.match(
      told.notices[0]!,
      new RegExp(
        `^audit events are written again, after [0-9]+ s in which ${told.failures()} writes failed: 50 events, and the counts of 50 events, kept meanwhile are written; none lost$`,
      ),
    );
    assert.deepEqual(told.lost, [], 'nothing lost');

    // A second outage is said again.
    state.down = true;
    refusal(log, 51);
    await log.flush();
    assert.equal(told.warnings.length, 2);
    state.down = false;
    await log.flush();
    assert.equal(told.notices.length, 2);
    assert.match(told.notices[1]!, /: 1 events, and the counts of 1 events, kept meanwhile are written; none lost$/);
  });

  it('keeps the order of recording across batches when a later batch of a turn finds the database away', async () => {
    const { store, events } = flakyStore([null, serviceUnavailable()]);
    const log = new EventLog(store, new FakeClock());
    for (let n = 0; n < 2_500; n++) refusal(log, n);
    await log.flush(); // the first 1000 written, the second batch fails: it and the third wait
    assert.equal(events.length, 1_000);
    assert.equal(log.unwritten, 1_500);
    await log.flush();
    assert.deepEqual(
      events.map((event) => event.details.n),
      Array.from({ length: 2_500 }, (_, i) => i),
    );
  });

  it('writes a batch whose commit was in doubt again with the same keys: each event is stored once', async () => {
    const { store, events, state } = flakyStore();
    const told = listener();
    const log = new EventLog(store, new FakeClock(), told.options);
    refusal(log, 1);
    refusal(log, 2);
    state.committedThenLost = true;
    await log.flush();
    assert.equal(log.unwritten, 2, 'kept: the log cannot tell that they were stored');
    refusal(log, 3);
    await log.flush();
    assert.equal(state.appends, 2);
    assert.deepEqual(
      events.map((event) => event.details.n),
      [1, 2, 3],
    );
    assert.equal(told.notices.length, 1);
  });

  it('writes a batch of counts whose commit was in doubt again as it was, with its number, before any later one: added once', async () => {
    const { store, counts, countWrites, lastBatches, state } = flakyStore();
    const told = listener();
    const log = new EventLog(store, new FakeClock(), told.options);
    const issued = () => log.record('token.issued', 'app1', OPERATOR, 'anonymous');
    issued();
    issued();
    log.record('token.throttled', 'app1', OPERATOR, null, { reason: 'address' });
    state.countsCommittedThenLost = true;
    await log.flush();
    // Recorded meanwhile, of a kind the batch in doubt has: not added to it, which its number would skip.
    issued();
    await log.flush();
    assert.deepEqual(countWrites, [
      { number: 1, counts: ['token.issued null 2', 'token.throttled address 1'] },
      { number: 1, counts: ['token.issued null 2', 'token.throttled address 1'] },
      { number: 2, counts: ['token.issued null 1'] },
    ]);
    assert.equal([...lastBatches.keys()].length, 1, 'one writer');
    assert.equal(
      counts.reduce((sum, count) => sum + count.count, 0),
      4,
      'each once',
    );
    assert.equal(told.notices.length, 1);
    assert.match(told.notices[0]!, /: 0 events, and the counts of 4 events, kept meanwhile are written; none lost$/);

    // Another log is another writer, whose batches are numbered on their own.
    const other = new EventLog(store, new FakeClock());
    other.record('token.issued', 'app1', OPERATOR, 'anonymous');
    await other.flush();
    assert.equal(countWrites.at(-1)!.number, 1);
    assert.equal([...lastBatches.keys()].length, 2);
    assert.equal(
      counts.reduce((sum, count) => sum + count.count, 0),
      5,
    );
  });

  it('loses the counts recorded past its bound while the database is away, but keeps the batch in doubt', async () => {
    const { store, counts, state } = flakyStore();
    const told = listener();
    const log = new EventLog(store, new FakeClock(), { ...told.options, maxKeptForRetry: 2 });
    const throttled = (reason: string) => log.record('token.throttled', 'app1', OPERATOR, null, { reason });
    throttled('a');
    throttled('b');
    throttled('c');
    state.down = true;
    await log.flush();
    assert.deepEqual(told.lost, [], 'the batch in doubt is kept, past the bound as it may be');
    throttled('d');
    throttled('d');
    await log.flush();
    assert.deepEqual(told.lost, ['counts buffer_full 2']);
    assert.match(told.warnings[1]!, /^the counts of 2 events are lost: more than 2 were kept while the database cannot be reached$/);
    state.down = false;
    await log.flush();
    assert.deepEqual(
      counts.map((count) => count.reason),
      ['a', 'b', 'c'],
    );
    assert.equal(told.notices.length, 1);
  });

  it('gives up a write that failed otherwise, says the events are lost, and counts them', async () => {
    const { store, events } = flakyStore([new Error('value too long')]);
    const told = listener();
    const log = new EventLog(store, new FakeClock(), told.options);
    refusal(log, 1);
    await log.flush();
    assert.equal(log.unwritten, 0);
    assert.deepEqual(told.warnings, ['1 audit events could not be written and are lost']);
    assert.deepEqual(told.lost, ['events refused 1']);
    refusal(log, 2);
    await log.flush();
    assert.deepEqual(
      events.map((event) => event.details.n),
      [2],
    );
  });

  it('loses, says once and counts the events recorded past its bound while the database is away; counts them still', async () => {
    const { store, events, counts, state } = flakyStore();
    const told = listener();
    const log = new EventLog(store, new FakeClock(), { ...told.options, maxKeptForRetry: 5 });
    state.down = true;
    refusal(log, 1);
    await log.flush();
    for (let n = 2; n <= 8; n++) refusal(log, n);
    assert.equal(log.unwritten, 5);
    assert.deepEqual(told.lost, ['events buffer_full 1', 'events buffer_full 1', 'events buffer_full 1']);
    assert.equal(told.warnings.length, 2, told.warnings.join(' | '));
    assert.match(
      told.warnings[1]!,
      /^audit events are being lost: 5 are waiting to be written already while the database cannot be reached/,
    );
    state.down = false;
    await log.flush();
    assert.deepEqual(
      events.map((event) => event.details.n),
      [1, 2, 3, 4, 5],
    );
    assert.equal(
      counts.reduce((sum, count) => sum + count.count, 0),
      8,
      'every event counted',
    );
    assert.equal(told.notices.length, 1);
    assert.match(
      told.notices[0]!,
      /: 5 events, and the counts of 8 events, kept meanwhile are written; 3 events recorded while the buffer was full are lost$/,
    );
  });

  it('shows what it loses in tessera_events_lost_total, apart from the writes that failed, each series at 0 from the start', async () => {
    const metrics = await loadPrometheusMetrics();
    const read = async () => new Scrape(parsePrometheusText((await metrics.scrape()).body));
    const lostSeries = (scraped: Scrape) => scraped.samples.filter((sample) => sample.name === 'tessera_events_lost_total');
    const before = await read();
    assert.equal(lostSeries(before).length, 6, 'events and counts, by three reasons');
    assert.ok(lostSeries(before).every((sample) => sample.value === 0));

    const { store, state } = flakyStore();
    const log = new EventLog(store, new FakeClock(), { metrics, maxKeptForRetry: 2 });
    state.down = true;
    for (let n = 1; n <= 5; n++) refusal(log, n);
    await log.flush();
    const during = await read();
    assert.equal(during.value('tessera_events_lost_total', { part: 'events', reason: 'buffer_full' }), 3);
    assert.equal(during.value('tessera_event_write_failures_total'), 1);
    await log.close();
    const after = await read();
    assert.equal(after.value('tessera_events_lost_total', { part: 'events', reason: 'stopped' }), 2);
    assert.equal(after.value('tessera_events_lost_total', { part: 'counts', reason: 'stopped' }), 5);
  });

  it('says and counts what it could not write when it closes while the database is away', async () => {
    const { store, state } = flakyStore();
    const told = listener();
    const log = new EventLog(store, new FakeClock(), told.options);
    state.down = true;
    refusal(log, 1);
    refusal(log, 2);
    log.record('token.issued', 'app1', OPERATOR, 'anonymous');
    await log.close();
    assert.deepEqual(told.lost, ['events stopped 2', 'counts stopped 3']);
    assert.equal(told.warnings.length, 2);
    assert.match(
      told.warnings[1]!,
      /^2 audit events, and the counts of 3 events, could not be written before stopping and are lost \(the database could not be reached for \d+ s\)$/,
    );
  });

  it('keeps trying, when it closes while the database is away, until it answers: nothing lost, nothing said lost', async () => {
    const { store, events, counts, state } = flakyStore();
    const told = listener();
    const log = new EventLog(store, new FakeClock(), told.options);
    state.down = true;
    refusal(log, 1);
    refusal(log, 2);
    const closing = log.close(new AbortController().signal);
    await sleep(EVENT_RETRY_DELAY_MS * 1.5);
    assert.equal(log.unwritten, 2, 'still waiting');
    state.down = false;
    await closing;
    assert.deepEqual(
      events.map((event) => event.details.n),
      [1, 2],
    );
    assert.equal(
      counts.reduce((sum, count) => sum + count.count, 0),
      2,
    );
    assert.deepEqual(told.lost, []);
    assert.equal(told.warnings.length, 1, 'the outage, said once');
    assert.equal(told.notices.length, 1, 'and its end');
  });

  it('gives up, when it closes while the database is away, once told to stop trying: says and counts what is lost', async () => {
    const { store, state } = flakyStore();
    const told = listener();
    const log = new EventLog(store, new FakeClock(), told.options);
    state.down = true;
    refusal(log, 1);
    const stopTrying = new AbortController();
    const closing = log.close(stopTrying.signal);
    await sleep(EVENT_RETRY_DELAY_MS / 2);
    const stopped = performance.now();
    stopTrying.abort();
    await closing;
    assert.ok(performance.now() - stopped < EVENT_RETRY_DELAY_MS / 2, 'at once, not at the next retry');
    assert.deepEqual(told.lost, ['events stopped 1', 'counts stopped 1']);
    assert.match(told.warnings.at(-1)!, /^1 audit events, and the counts of 1 events, could not be written before stopping and are lost/);
  });

  it('abandons at once what it has not written, a write under way included: counted, not said, nothing written after', async () => {
    const { store, events, state } = flakyStore();
    const told = listener();
    const log = new EventLog(store, new FakeClock(), told.options);
    // A write that hangs (a database stopped): the first two events are sent and never answered.
    let release: () => void = () => {};
    const hanging = new Promise<void>((resolve) => (release = resolve));
    const append = store.append.bind(store);
    store.append = async (batch) => {
      await hanging;
      return append(batch);
    };
    refusal(log, 1);
    refusal(log, 2);
    void log.flush();
    await sleep(5);
    refusal(log, 3);
    const closing = log.close(new AbortController().signal);
    assert.deepEqual(log.abandon(), { events: 3, eventsSent: 2, counts: 3 });
    assert.deepEqual(told.lost, ['events stopped 3', 'counts stopped 3']);
    release();
    await closing;
    assert.equal(state.appends, 1, 'the write under way ends; none after it');
    assert.equal(events.length, 2, 'what it sent may be stored after all');
    assert.deepEqual(told.warnings, [], 'the caller says it');
    assert.equal(log.unwritten, 0);
  });

  it('tells the events sent in writes that found the database away from those never sent', async () => {
    const { store, state } = flakyStore();
    const log = new EventLog(store, new FakeClock(), listener().options);
    state.down = true;
    refusal(log, 1);
    refusal(log, 2);
    await log.flush();
    refusal(log, 3);
    assert.deepEqual(log.abandon(), { events: 3, eventsSent: 2, counts: 3 });
  });

  it('loses nothing when it closes with the database there', async () => {
    const { store, events } = flakyStore();
    const told = listener();
    const log = new EventLog(store, new FakeClock(), told.options);
    refusal(log, 1);
    await log.close();
    assert.equal(events.length, 1);
    assert.deepEqual(told.warnings, []);
    assert.deepEqual(told.lost, []);
  });
});
