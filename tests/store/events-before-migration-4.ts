import assert from 'node:assert/strict';
import type { NewAuditEvent } from '../../src/events/event.js';
import type { Store } from '../../src/store/store.js';
import { makeEvent, T0 } from '../helpers/fixtures.js';

/**
 * An app's log as the releases before migration 4 wrote it, oldest first: 5 admin events among 20
 * anonymous tokens issued (one row each, then) and 20 refusals.
 */
export function eventsBeforeMigration4(appId: string): NewAuditEvent[] {
  return Array.from({ length: 45 }, (_, i) => {
    const at = T0 + i;
    if (i % 9 === 4) return makeEvent(appId, { at, principal: 'admin', details: { n: i } });
    if (i % 2 === 0) return makeEvent(appId, { at, principal: 'anonymous', details: { n: i } });
    return makeEvent(appId, { at, type: 'token.refused', principal: null, details: { reason: 'invalid_token', n: i } });
  });
}

/**
 * After migration 4, every row is still there; refusals are trimmed apart from the rest, and the
 * old anonymous rows count as audit events, older than any written from then on.
 */
export async function assertMigratedEvents(store: Store, appId: string): Promise<void> {
  const listed = await store.events.list({ appId, limit: 100 });
  assert.deepEqual(
    listed.map((event) => event.details.n),
    Array.from({ length: 45 }, (_, i) => 44 - i),
  );
  assert.equal(await store.events.trimApp(appId, 'refusal', 5, 1000), 20 - 5);
  assert.equal(await store.events.trimApp(appId, 'audit', 25, 1000), 0);
  await store.events.append([makeEvent(appId, { at: T0 + 100, principal: 'admin', details: { n: 100 } })]);
  // The oldest audit row goes first: an old anonymous token's.
  assert.equal(await store.events.trimApp(appId, 'audit', 25, 1000), 1);
  assert.equal((await store.events.list({ appId, limit: 100 })).at(-1)?.details.n, 2);
  const kept = await store.events.list({ appId, limit: 100 });
  assert.equal(kept.filter((event) => event.type === 'token.refused').length, 5);
  assert.deepEqual(
    kept.filter((event) => event.principal === 'admin').map((event) => event.details.n),
    [100, 40, 31, 22, 13, 4],
  );
  await store.events.addCounts([{ appId, bucket: T0, type: 'token.issued', principal: 'anonymous', reason: null, count: 2 }]);
  assert.equal((await store.events.listCounts({ appId, bucketMs: 60_000, since: T0, until: T0 + 60_000 }))[0]?.count, 2);
}
