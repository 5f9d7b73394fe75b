import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isTesseraError } from 'tessera-tokens/internal/errors.js';
import { listFilter, parseEventView, spanText, viewQuery, ViewMistake } from '../../src/portal/pages/events/form.js';

// What the events page shows, from its query: the range and the filters of its one GET form.

const NOW = Date.parse('2026-11-23T17:42:10.500Z');
const at = (iso: string) => Date.parse(iso);

describe('parseEventView', () => {
  it('takes the last 24 hours by default; a range that ends now starts with its first minute, hour or day', () => {
    const spans = Object.fromEntries(
      ['15m', '1h', '1d', '30d'].map((range) => {
        const view = parseEventView({ range }, NOW);
        return [range, [new Date(view.since).toISOString(), view.until - NOW]];
      }),
    );
    assert.deepEqual(spans, {
      '15m': ['2026-11-23T17:28:00.000Z', 1],
      '1h': ['2026-11-23T16:43:00.000Z', 1],
      '1d': ['2026-11-22T18:00:00.000Z', 1],
      '30d': ['2026-10-25T00:00:00.000Z', 1],
    });
    assert.deepEqual(parseEventView({}, NOW), parseEventView({ range: '1d' }, NOW));
    assert.equal(parseEventView({ range: '' }, NOW).range, '1d');
  });

  it('takes a custom range as the datetime-local fields send it, in UTC, or in RFC 3339; From included, To not', () => {
    const view = parseEventView({ range: 'custom', from: '2026-11-23T14:02', to: '2026-11-23T14:05' }, NOW);
    assert.deepEqual([view.since, view.until], [at('2026-11-23T14:02:00Z'), at('2026-11-23T14:05:00Z')]);
    assert.deepEqual([view.from, view.to], ['2026-11-23T14:02', '2026-11-23T14:05']);
    assert.deepEqual(listFilter(view), { since: view.since, until: view.until });
    const seconds = parseEventView({ range: 'custom', from: '2026-11-23T14:02:30', to: '2026-11-23T15:05:00+01:00' }, NOW);
    assert.deepEqual([seconds.since, seconds.until], [at('2026-11-23T14:02:30Z'), at('2026-11-23T14:05:00Z')]);
    assert.deepEqual([seconds.from, seconds.to], ['2026-11-23T14:02:30', '2026-11-23T14:05']);
    // A link may give from and to alone.
    assert.equal(parseEventView({ from: '2026-11-23T14:02', to: '2026-11-23T14:05' }, NOW).range, 'custom');
  });

  it('leaves a custom range’s times aside when another range is chosen (the form sends them whatever is chosen)', () => {
    const view = parseEventView({ range: '1h', from: '2026-11-23T14:02', to: 'garbage' }, NOW);
    assert.equal(view.range, '1h');
    assert.deepEqual([view.from, view.to], ['', '']);
    assert.equal(listFilter(view).until, undefined, 'a range that ends now is open at its end');
  });

  it('names the field of a mistake in what was typed', () => {
    const mistake = (raw: Parameters<typeof parseEventView>[0]) => {
      try {
        parseEventView(raw, NOW);
      } catch (error) {
        if (error instanceof ViewMistake) return [error.field, error.message];
        throw error;
      }
      assert.fail('no mistake');
    };
    assert.deepEqual(mistake({ range: 'custom' })[0], 'from');
    assert.deepEqual(mistake({ range: 'custom', from: '2026-11-23T14:02' })[0], 'to');
    assert.deepEqual(mistake({ range: 'custom', from: '2026-11-23T14:05', to: '2026-11-23T14:05' }), ['to', 'To must be after From.']);
    assert.deepEqual(
      mistake({ range: 'custom', from: '2026-01-01T00:00', to: '2026-04-01T00:01' })[1],
      'From and To must be at most 90 days apart.',
    );
    assert.equal(parseEventView({ range: 'custom', from: '2026-01-01T00:00', to: '2026-04-01T00:00' }, NOW).range, 'custom', '90 days');
    assert.deepEqual(mistake({ range: 'custom', from: '2026-02-29T00:00', to: '2026-03-02T00:00' })[0], 'from', 'no 29 February in 2026');
    assert.deepEqual(mistake({ range: 'custom', from: '2026-11-23 14:02', to: '2026-11-23T14:05' })[0], 'from');
    assert.deepEqual(mistake({ range: 'custom', from: '2026-11-23T14:02', to: `2026-11-23T14:05${'0'.repeat(100)}` })[0], 'to');
    assert.deepEqual(mistake({ range: 'week' })[0], 'range');
    assert.deepEqual(mistake({ clientAddress: 'example.com' })[0], 'clientAddress');
    assert.deepEqual(mistake({ clientAddress: '203.0.113.0/24' })[0], 'clientAddress');
    assert.equal(parseEventView({ clientAddress: ' 2001:db8::1 ' }, NOW).clientAddress, '2001:db8::1', 'trimmed');
  });

  it('refuses a type or a reason that is none with invalid_request: they come from a list, or a link', () => {
    for (const raw of [{ type: 'token.stolen' }, { reason: 'Invalid' }, { reason: 'a'.repeat(41) }]) {
      assert.throws(
        () => parseEventView(raw, NOW),
        (error) => isTesseraError(error) && error.code === 'invalid_request',
      );
    }
    const view = parseEventView({ type: 'token.refused', reason: 'invalid_client' }, NOW);
    assert.deepEqual([view.type, view.reason], ['token.refused', 'invalid_client']);
  });
});

describe('viewQuery', () => {
  it('gives the view back as a query, the default range left out, with changes', () => {
    assert.equal(viewQuery(parseEventView({}, NOW)), '');
    const view = parseEventView({ range: 'custom', from: '2026-11-23T14:02', to: '2026-11-23T14:05', clientAddress: '2001:db8::1' }, NOW);
    assert.equal(viewQuery(view), '?range=custom&from=2026-11-23T14%3A02&to=2026-11-23T14%3A05&clientAddress=2001%3Adb8%3A%3A1');
    assert.equal(
      viewQuery(view, { clientAddress: '', cursor: '42' }),
      '?range=custom&from=2026-11-23T14%3A02&to=2026-11-23T14%3A05&cursor=42',
    );
    assert.equal(viewQuery(view, { range: '30d' }), '?range=30d&clientAddress=2001%3Adb8%3A%3A1');
    assert.deepEqual(parseEventView(Object.fromEntries(new URLSearchParams(viewQuery(view))), NOW), view, 'the same view again');
  });
});

describe('spanText', () => {
  it('says a span within a day once, and one across days in full', () => {
    assert.equal(spanText(at('2026-11-23T14:02:00Z'), at('2026-11-23T14:05:00Z')), '2026-11-23 14:02 to 14:05 UTC');
    assert.equal(spanText(at('2026-11-22T22:00:00Z'), at('2026-11-23T02:00:00Z')), '2026-11-22 22:00 UTC to 2026-11-23 02:00 UTC');
    assert.equal(spanText(at('2026-11-23T14:02:30Z'), at('2026-11-23T14:05:00Z')), '2026-11-23 14:02:30 to 14:05:00 UTC');
  });
});
