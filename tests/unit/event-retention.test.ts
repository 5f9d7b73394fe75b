import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { countBucketOf, describeCounts, eventCountQuery, parseEventCountQuery, type EventCount } from '../../src/events/counts.js';
import { EVENT_TYPES, type EventType } from '../../src/events/event.js';
import { classOfRow, retentionOf } from '../../src/events/retention.js';
import type { Actor } from '../../src/request-context.js';
import { FakeClock } from '../helpers/clock.js';

describe('retentionOf: what is a row, of which class, and what is only counted', () => {
  it("counts anonymous tokens issued and revoked by themselves and throttled admin attempts, keeps refusals apart, and everything else (a developer's too) as audit", () => {
    const cases: [EventType, Actor | null, string][] = [
      ['token.issued', 'anonymous', 'counted'],
      ['token.issued', 'admin', 'audit'],
      ['token.revoked', 'anonymous', 'counted'],
      ['token.revoked', null, 'counted'],
      ['token.revoked', 'admin', 'audit'],
      ['token.revoked', 'operator', 'audit'],
      ['token.refused', 'anonymous', 'refusal'],
      ['token.refused', 'admin', 'refusal'],
      ['token.refused', null, 'refusal'],
      // Past the failed-admin limits anyone can cause any number of them: counted only, whoever sent it.
      ['token.throttled', 'admin', 'counted'],
      ['token.throttled', null, 'counted'],
      ['app.secret_rotated', 'operator', 'audit'],
      ['app.configuration_changed', 'admin', 'audit'],
      ['app.configuration_changed', 'operator', 'audit'],
      // It takes the ClientSecret to cause one: it must not be pushed out by what the AppID alone can cause.
      ['app.secret_exposed', 'admin', 'audit'],
      ['app.configuration_changed', 'developer', 'audit'],
      ['token.revoked', 'developer', 'audit'],
      ['app.owner_changed', 'operator', 'audit'],
      ['app.collaborator_invited', 'developer', 'audit'],
      ['app.collaborator_added', 'developer', 'audit'],
      ['app.collaborator_removed', 'operator', 'audit'],
      ['app.invitation_withdrawn', 'operator', 'audit'],
    ];
    for (const [type, principal, expected] of cases) assert.equal(retentionOf(type, principal), expected, `${type} by ${principal}`);
  });

  it('puts every row in the class the stores find it in by its type', () => {
    for (const type of EVENT_TYPES) {
      for (const principal of ['admin', 'anonymous', 'operator', 'developer', null] as const) {
        const retention = retentionOf(type, principal);
        if (retention !== 'counted') assert.equal(classOfRow(type), retention, `${type} by ${principal}`);
      }
    }
  });
});

describe('counts queries', () => {
  const clock = new FakeClock(Date.parse('2026-06-01T10:37:12.345Z'));
  const now = clock.now();

  it('defaults to a day per hour up to now, since moved back to the start of its hour', () => {
    assert.deepEqual(parseEventCountQuery({}, now), { per: 'hour', since: Date.parse('2026-05-31T10:00:00Z'), until: now });
    assert.deepEqual(parseEventCountQuery({ per: 'minute' }, now), {
      per: 'minute',
      since: Date.parse('2026-06-01T09:37:00Z'),
      until: now,
    });
    assert.deepEqual(parseEventCountQuery({ per: 'day', since: '', until: '' }, now), {
      per: 'day',
      since: Date.parse('2026-05-02T00:00:00Z'),
      until: now,
    });
  });

  it('reads RFC 3339 date-times with a fraction or an offset', () => {
    assert.deepEqual(parseEventCountQuery({ per: 'hour', since: '2026-06-01T02:30:00.5+02:00', until: '2026-06-01T03:00:00Z' }, now), {
      per: 'hour',
      since: Date.parse('2026-06-01T00:00:00Z'),
      until: Date.parse('2026-06-01T03:00:00Z'),
    });
  });

  it('answers at most 1440 buckets', () => {
    const since = Date.parse('2026-06-01T00:00:00Z');
    assert.equal(eventCountQuery({ per: 'minute', since, until: since + 1440 * 60_000 }, now).since, since);
    assert.throws(
      () => eventCountQuery({ per: 'minute', since, until: since + 1440 * 60_000 + 1 }, now),
      /1441 buckets of a minute; at most 1440/,
    );
    assert.throws(
      () => eventCountQuery({ per: 'day', since: 0, until: now }, now),
      /at most 1440 are answered at once: narrow the span\.$/,
    );
  });

  it('refuses what is not a period or a date-time, and an empty span', () => {
    for (const raw of [
      { per: 'weeks' },
      { per: 'toString' },
      { since: '2026-06-01' },
      { since: '2026-06-01T00:00:00' },
      { since: '2026-02-30T00:00:00Z' },
      { since: '2026-01-01T24:00:00Z' },
      { since: '2026-01-01T00:00:00+24:00' },
      { since: '2026-01-01T00:00:00.1234Z' },
      { until: 'now' },
      { since: '2026-06-01T10:00:00Z', until: '2026-06-01T10:00:00Z' },
    ]) {
      assert.throws(
        () => parseEventCountQuery(raw, now),
        (error: any) => error.code === 'invalid_request',
        JSON.stringify(raw),
      );
    }
  });

  it('describes counts with totals per kind, the busiest first, and the buckets oldest first', () => {
    const hour = Date.parse('2026-06-01T09:00:00Z');
    const row = (bucket: number, type: EventType, principal: Actor | null, reason: string | null, count: number): EventCount => ({
      appId: 'app',
      bucket,
      type,
      principal,
      reason,
      count,
    });
    const query = { per: 'hour' as const, since: hour, until: now };
    const described = describeCounts('app', query, [
      row(hour, 'token.issued', 'anonymous', null, 5),
      row(hour, 'token.refused', null, 'invalid_token', 7),
      row(hour + 3_600_000, 'token.issued', 'anonymous', null, 4),
    ]);
    assert.deepEqual(described, {
      appId: 'app',
      per: 'hour',
      since: '2026-06-01T09:00:00.000Z',
      until: '2026-06-01T10:37:12.345Z',
      totals: [
        { type: 'token.issued', principal: 'anonymous', attempted: null, reason: null, count: 9 },
        { type: 'token.refused', principal: null, attempted: null, reason: 'invalid_token', count: 7 },
      ],
      buckets: [
        {
          start: '2026-06-01T09:00:00.000Z',
          counts: [
            { type: 'token.issued', principal: 'anonymous', attempted: null, reason: null, count: 5 },
            { type: 'token.refused', principal: null, attempted: null, reason: 'invalid_token', count: 7 },
          ],
        },
        {
          start: '2026-06-01T10:00:00.000Z',
          counts: [{ type: 'token.issued', principal: 'anonymous', attempted: null, reason: null, count: 4 }],
        },
      ],
    });
    assert.equal(countBucketOf(now), Date.parse('2026-06-01T10:37:00Z'));
  });
});
