import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { describeCounts, type EventCount } from '../../src/events/counts.js';
import { bucketLabel, chartQueries, seriesSummary, tickLabel, tokenChart, tokenSeries, valueAxis } from '../../src/portal/chart.js';

// The events page's chart: counts in, SVG out, with a clock of the test's.

const NOW = Date.parse('2026-11-23T17:42:10Z');
const clock = { now: () => NOW };
const HOUR = 3_600_000;
const DAY = 86_400_000;

function row(
  bucket: number,
  type: EventCount['type'],
  principal: EventCount['principal'],
  count: number,
  reason: string | null = null,
): EventCount {
  return { appId: 'app', bucket, type, principal, reason, count };
}

describe('chartQueries', () => {
  it('asks for the last 24 hours, this one included, and the last 30 days, today included', () => {
    const { hour, day } = chartQueries(clock);
    assert.equal(hour.per, 'hour');
    assert.equal(new Date(hour.since).toISOString(), '2026-11-22T18:00:00.000Z');
    assert.ok(hour.until > NOW);
    assert.equal(day.per, 'day');
    assert.equal(new Date(day.since).toISOString(), '2026-10-25T00:00:00.000Z');
  });
});

describe('tokenSeries', () => {
  it('has every hour, zeros where nothing happened, and adds issued and refused apart', () => {
    const query = chartQueries(clock).hour;
    const thisHour = NOW - (NOW % HOUR);
    const series = tokenSeries(
      describeCounts('app', query, [
        row(thisHour, 'token.issued', 'admin', 2),
        row(thisHour, 'token.issued', 'anonymous', 5),
        row(thisHour, 'token.refused', 'admin', 40, 'invalid_client'),
        row(thisHour, 'token.refused', null, 1, 'invalid_token'),
        row(thisHour - 3 * HOUR, 'token.issued', 'anonymous', 1),
        row(thisHour, 'app.configuration_changed', 'developer', 3),
      ]),
    );
    assert.equal(series.per, 'hour');
    assert.equal(series.buckets.length, 24);
    assert.deepEqual(series.buckets.at(-1), { start: thisHour, admin: 2, anonymous: 5, refused: 41, throttled: 0 });
    assert.deepEqual(series.buckets.at(-4), { start: thisHour - 3 * HOUR, admin: 0, anonymous: 1, refused: 0, throttled: 0 });
    assert.equal(series.buckets.filter((bucket) => bucket.admin + bucket.anonymous + bucket.refused > 0).length, 2);
    assert.match(
      seriesSummary(series),
      /8 tokens issued \(2 admin, 6 anonymous\), 41 requests refused\. Most refusals in one hour: 41, at 2026-11-23 17:00 UTC\./,
    );
  });

  it('counts admin attempts throttled by the failed-admin limits as refused, and apart as throttled', () => {
    const thisHour = NOW - (NOW % HOUR);
    const series = tokenSeries(
      describeCounts('app', chartQueries(clock).hour, [
        row(thisHour, 'token.refused', 'admin', 7, 'invalid_client'),
        row(thisHour, 'token.throttled', 'admin', 30, 'address'),
        row(thisHour, 'token.throttled', 'admin', 3, 'app'),
        row(thisHour - HOUR, 'token.issued', 'admin', 1),
      ]),
    );
    assert.deepEqual(series.buckets.at(-1), { start: thisHour, admin: 0, anonymous: 0, refused: 40, throttled: 33 });
    assert.deepEqual(series.buckets.at(-2), { start: thisHour - HOUR, admin: 1, anonymous: 0, refused: 0, throttled: 0 });
    assert.match(
      seriesSummary(series),
      /40 requests refused \(33 of them throttled after too many wrong secrets\)\. Most refusals in one hour: 40,/,
    );
    const svg = tokenChart(series, 'chart-throttled', 'Last 24 hours').text;
    assert.deepEqual(
      [...svg.matchAll(/<rect class="bar (issued|refused)" data-count="(\d+)"/g)].map((match) => [match[1], Number(match[2])]),
      [
        ['issued', 1],
        ['refused', 40],
      ],
    );
    assert.match(svg, /data-refused="40" data-throttled="33"/);
    assert.match(svg, /<strong class="refused-total">40 refused<\/strong> \(33 throttled\)/);
    assert.match(svg, /<th scope="col">Of those, throttled<\/th>/);
    assert.match(svg, /<tr><th scope="row">2026-11-23 17:00 UTC<\/th><td>0<\/td><td>0<\/td><td>40<\/td><td>33<\/td><\/tr>/);
    assert.match(svg, /admin attempts throttled after too many wrong secrets\)<\/li>/);
  });

  it('has 30 days for the daily chart', () => {
    const series = tokenSeries(
      describeCounts('app', chartQueries(clock).day, [row(NOW - (NOW % DAY) - DAY, 'token.refused', 'anonymous', 7)]),
    );
    assert.equal(series.buckets.length, 30);
    assert.equal(series.buckets.at(-2)!.refused, 7);
    assert.equal(bucketLabel('day', series.buckets.at(-2)!.start), '22 Nov');
  });
});

describe('valueAxis', () => {
  it('ends on a round number at or above the largest value, in whole steps', () => {
    assert.deepEqual(valueAxis(0), { top: 4, step: 1 });
    assert.deepEqual(valueAxis(1), { top: 1, step: 1 });
    assert.deepEqual(valueAxis(7), { top: 8, step: 2 });
    assert.deepEqual(valueAxis(41), { top: 60, step: 20 });
    assert.deepEqual(valueAxis(1000), { top: 1000, step: 500 });
  });

  it('labels its ticks short, so that they fit beside the axis', () => {
    assert.deepEqual([0, 20, 900, 1000, 1500, 20_000, 250_000].map(tickLabel), ['0', '20', '900', '1k', '1.5k', '20k', '250k']);
  });
});

describe('tokenChart', () => {
  const thisHour = NOW - (NOW % HOUR);
  const series = tokenSeries(
    describeCounts('app', chartQueries(clock).hour, [
      row(thisHour, 'token.issued', 'admin', 3),
      row(thisHour - HOUR, 'token.refused', 'admin', 40, 'invalid_client'),
    ]),
  );
  const svg = tokenChart(series, 'chart-test', 'Last 24 hours').text;

  it('draws one bar per non-zero value, refused ones hatched, as tall as their share of the axis', () => {
    const bars = [...svg.matchAll(/<rect class="bar (issued|refused)" data-count="(\d+)"[^>]*height="([\d.]+)"/g)].map((match) => [
      match[1],
      Number(match[2]),
      Number(match[3]),
    ]);
    assert.deepEqual(
      bars.map(([kind, count]) => [kind, count]),
      [
        ['refused', 40],
        ['issued', 3],
      ],
    );
    const [, , refusedHeight] = bars[0]!;
    const [, , issuedHeight] = bars[1]!;
    assert.ok(Math.abs((issuedHeight as number) / (refusedHeight as number) - 3 / 40) < 0.01);
    assert.match(svg, /<rect class="bar refused"[^>]*fill="url\(#chart-test-hatch\)"/);
    assert.match(svg, /<pattern id="chart-test-hatch"/);
  });

  it('has a title and a description for screen readers, labelled axes, a legend and a table of the numbers', () => {
    assert.match(svg, /<svg [^>]*role="img" aria-labelledby="chart-test-title chart-test-desc"/);
    assert.match(svg, /<title id="chart-test-title">Last 24 hours: tokens issued and requests refused per hour \(UTC\)<\/title>/);
    assert.match(svg, /<desc id="chart-test-desc">In the last 24 hours: 3 tokens issued \(3 admin, 0 anonymous\), 40 requests refused\./);
    assert.match(svg, />Hour \(UTC\)</);
    assert.match(svg, />Per hour</);
    assert.match(svg, /<ul class="legend"/);
    assert.equal([...svg.matchAll(/<tr><th scope="row">/g)].length, 24);
    assert.match(svg, /<tr><th scope="row">2026-11-23 16:00 UTC<\/th><td>0<\/td><td>0<\/td><td>40<\/td><td>0<\/td><\/tr>/);
    assert.doesNotMatch(svg, /style=/, 'the CSP blocks style attributes');
  });

  it('labels every fourth hour, ending with this one', () => {
    const labels = [...svg.matchAll(/<text class="tick" x="[\d.]+" y="[\d.]+" text-anchor="middle"[^>]*>([^<]+)</g)].map(
      (match) => match[1],
    );
    assert.deepEqual(labels, ['21:00', '01:00', '05:00', '09:00', '13:00', '17:00']);
  });

  it('draws an empty chart with an axis when nothing happened', () => {
    const empty = tokenChart(tokenSeries(describeCounts('app', chartQueries(clock).day, [])), 'chart-empty', 'Last 30 days').text;
    assert.doesNotMatch(empty, /class="bar /);
    assert.match(empty, /data-issued="0" data-refused="0" data-throttled="0"/);
    assert.match(empty, />0 issued, 0 refused</);
  });
});
