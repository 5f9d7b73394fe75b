import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { REFUSAL_BURST_PER_MINUTE, refusalBurstOf } from '../../src/apps/attention.js';
import type { CountOfKind, EventCountsDescription } from '../../src/events/counts.js';

// What makes a burst of refusals on the list of apps, from an app's counts per minute.

type Kind = Pick<CountOfKind, 'type' | 'reason' | 'count'>;

function countsOf(minutes: Record<string, Kind[]>): EventCountsDescription {
  return {
    appId: 'app',
    per: 'minute',
    since: '2026-11-27T13:00:00.000Z',
    until: '2026-11-27T14:00:00.000Z',
    totals: [],
    buckets: Object.entries(minutes).map(([start, kinds]) => ({
      start,
      counts: kinds.map((kind) => ({ principal: null, attempted: 'admin', ...kind })),
    })),
  };
}

const wrongSecrets = (count: number): Kind => ({ type: 'token.refused', reason: 'invalid_client', count });

describe('a burst of refused key requests', () => {
  it(`is ${REFUSAL_BURST_PER_MINUTE} in one minute, not one fewer, nor the same spread over two minutes`, () => {
    assert.equal(refusalBurstOf(countsOf({ '2026-11-27T13:05:00.000Z': [wrongSecrets(REFUSAL_BURST_PER_MINUTE - 1)] })), null);
    assert.equal(
      refusalBurstOf(countsOf({ '2026-11-27T13:05:00.000Z': [wrongSecrets(6)], '2026-11-27T13:06:00.000Z': [wrongSecrets(6)] })),
      null,
    );
    assert.deepEqual(refusalBurstOf(countsOf({ '2026-11-27T13:05:00.000Z': [wrongSecrets(REFUSAL_BURST_PER_MINUTE)] })), {
      minute: '2026-11-27T13:05:00.000Z',
      refused: REFUSAL_BURST_PER_MINUTE,
      throttled: 0,
    });
  });

  it('counts throttled attempts and a credential refused for its address or expiry, never a refused bearer token', () => {
    const minute = '2026-11-27T13:05:00.000Z';
    assert.deepEqual(
      refusalBurstOf(
        countsOf({
          [minute]: [
            wrongSecrets(3),
            { type: 'token.throttled', reason: 'address', count: 4 },
            { type: 'credential.refused', reason: 'address_not_allowed', count: 3 },
            { type: 'token.refused', reason: 'invalid_token', count: 500 },
            { type: 'token.issued', reason: null, count: 900 },
          ],
        }),
      ),
      { minute, refused: 10, throttled: 4 },
    );
    assert.equal(refusalBurstOf(countsOf({ [minute]: [{ type: 'token.refused', reason: 'invalid_token', count: 500 }] })), null);
  });

  it('names the busiest minute, the earliest of equals', () => {
    const burst = refusalBurstOf(
      countsOf({
        '2026-11-27T13:05:00.000Z': [wrongSecrets(12)],
        '2026-11-27T13:20:00.000Z': [wrongSecrets(40)],
        '2026-11-27T13:40:00.000Z': [wrongSecrets(40)],
      }),
    );
    assert.deepEqual(burst, { minute: '2026-11-27T13:20:00.000Z', refused: 40, throttled: 0 });
  });
});
