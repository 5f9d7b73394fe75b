import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { serviceUnavailable } from '../../src/error-catalogue.js';
import type { EventCount } from '../../src/events/counts.js';
import type { NewAuditEvent } from '../../src/events/event.js';
import { EVENT_RETRY_DELAY_MS, EventLog } from '../../src/events/log.js';
import type { EventStore } from '../../src/events/store.js';
import { OPERATOR } from '../../src/request-context.js';
import { FakeClock } from '../helpers/clock.js';

// The audit log's writes when the store fails: an outage (503) loses nothing, any other failure is
// reported and given up. Over a store whose writes fail as told, with real timers.

/** A store that keeps what it is given, failing each write with what `failures` holds next. */
function flakyStore(failures: (Error | null)[]) {
  const events: NewAuditEvent[] = [];
  const counts: EventCount[] = [];
  const store = {
    append: async (batch: NewAuditEvent[]) => {
      const failure = failures.shift() ?? null;
      if (failure !== null) throw failure;
      events.push(...batch);
    },
    addCounts: async (batch: EventCount[]) => {
      counts.push(...batch);
    },
  } as unknown as EventStore;
  return { store, events, counts };
}

const refusal = (log: EventLog, n: number) => log.record('token.refused', 'app1', OPERATOR, 'admin', { reason: 'invalid_client', n });

describe('the event log when the store fails', () => {
  it('writes again, in order, the events whose write met an unreachable database, with those recorded meanwhile', async () => {
    const { store, events } = flakyStore([serviceUnavailable(), serviceUnavailable()]);
    const told: string[] = [];
    const log = new EventLog(store, new FakeClock(), (message) => told.push(message));
    refusal(log, 1);
    refusal(log, 2);
    await log.flush();
    assert.equal(log.unwritten, 2, 'kept');
    refusal(log, 3);
    await log.flush(); // fails again: all three kept, in order
    assert.equal(log.unwritten, 3);
    await new Promise((resolve) => setTimeout(resolve, EVENT_RETRY_DELAY_MS + 200));
    await log.flush();
    assert.deepEqual(
      events.map((event) => event.details.n),
      [1, 2, 3],
    );
    assert.equal(log.unwritten, 0);
    assert.equal(told.length, 1, `one warning for the outage: ${told.join(' | ')}`);
    assert.match(told[0]!, /tried again/);
  });

  it('gives up a write that failed otherwise, and says the events are lost', async () => {
    const { store, events } = flakyStore([new Error('value too long')]);
    const told: string[] = [];
    const log = new EventLog(store, new FakeClock(), (message) => told.push(message));
    refusal(log, 1);
    await log.flush();
    assert.equal(log.unwritten, 0);
    assert.deepEqual(told, ['1 audit events could not be written and are lost']);
    refusal(log, 2);
    await log.flush();
    assert.deepEqual(
      events.map((event) => event.details.n),
      [2],
    );
  });
});
