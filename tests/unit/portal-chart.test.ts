import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { describeCounts, type EventCount } from '../../src/events/counts.js';
import {
  bucketLabel,
  chartQuery,
  labelledBuckets,
  periodFor,
  seriesSummary,
  tickLabel,
  tokenChart,
  tokenSeries,
  valueAxis,
  type TokenSeries,
} from '../../src/portal/pages/events/chart.js';

// The events page's chart: counts in, SVG out, with a clock of the test's.

const NOW = Date.parse('2026-11-23T17:42:10Z');
const MINUTE = 60_000;
const HOUR = 3_600_000;
const DAY = 86_400_000;
/** The last 24 hours, this one included, and the last 30 days, today included: as the events page asks. */
const lastDay = chartQuery(NOW - (NOW % HOUR) - 23 * HOUR, NOW + 1)!;
const lastMonth = chartQuery(NOW - (NOW % DAY) - 29 * DAY, NOW + 1)!;
const IN_THE_LAST_DAY = 'In the last 24 hours';

function row(
  bucket: number,
  type: EventCount['type'],
  principal: EventCount['principal'],
  count: number,
  reason: string | null = null,
): EventCount {
  return { appId: 'app', bucket, type, principal, reason, count };
}

describe('chartQuery', () => {
  it('asks for minutes up to 2 hours, hours up to 2 days, days beyond', () => {
    assert.equal(lastDay.per, 'hour');
    assert.equal(new Date(lastDay.since).toISOString(), '2026-11-22T18:00:00.000Z');
    assert.ok(lastDay.until > NOW);
    assert.equal(lastMonth.per, 'day');
    assert.equal(new Date(lastMonth.since).toISOString(), '2026-10-25T00:00:00.000Z');
    assert.deepEqual([15 * MINUTE, 2 * HOUR, 2 * HOUR + 1, 2 * DAY, 2 * DAY + 1, 90 * DAY].map(periodFor), [
      'minute',
      'minute',
      'hour',
      'hour',
      'day',
      'day',
    ]);
    assert.deepEqual(chartQuery(NOW - 3 * MINUTE, NOW), { per: 'minute', since: NOW - (NOW % MINUTE) - 3 * MINUTE, until: NOW });
  });

  it('never starts before the app was created: a new app’s month is its minutes, then its hours, then its days', () => {
    const monthOf = (createdAt: number) => chartQuery(lastMonth.since, NOW + 1, createdAt)!;
    const tenMinutesOld = monthOf(NOW - 10 * MINUTE - 30_000);
    assert.deepEqual(tenMinutesOld, { per: 'minute', since: NOW - (NOW % MINUTE) - 11 * MINUTE, until: NOW + 1 });
    const series = tokenSeries(describeCounts('app', tenMinutesOld, []));
    assert.equal(series.buckets.length, 12, 'the minute it was created in, to this one');
    assert.equal(monthOf(NOW - 5 * HOUR).per, 'hour');
    assert.equal(tokenSeries(describeCounts('app', monthOf(NOW - 5 * HOUR), [])).buckets.length, 6);
    assert.equal(monthOf(NOW - 3 * DAY).per, 'day');
    assert.equal(tokenSeries(describeCounts('app', monthOf(NOW - 3 * DAY), [])).buckets.length, 4);
    assert.deepEqual(monthOf(NOW - 40 * DAY), lastMonth, 'an older app: the whole month');
    assert.equal(chartQuery(NOW - HOUR, NOW, NOW + MINUTE), null, 'created after the range');
  });

  it('counts only the minutes of a span that does not start on an hour or a day', () => {
    const since = Date.parse('2026-11-23T14:02:00Z');
    const query = chartQuery(since, since + 5 * HOUR)!;
    assert.deepEqual(query, { per: 'hour', since, until: since + 5 * HOUR });
    const series = tokenSeries(describeCounts('app', query, [row(since - (since % HOUR), 'token.issued', 'admin', 4)]));
    assert.deepEqual(
      series.buckets.map((bucket) => new Date(bucket.start).toISOString().slice(11, 16)),
      ['14:00', '15:00', '16:00', '17:00', '18:00', '19:00'],
    );
    assert.equal(series.buckets[0]!.admin, 4, 'the store gave the minutes from 14:02 on, summed in the hour of 14:00');
  });
});

describe('tokenSeries', () => {
  it('has every hour, zeros where nothing happened, and adds issued and refused apart', () => {
    const query = lastDay;
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
      seriesSummary(series, IN_THE_LAST_DAY),
      /^In the last 24 hours: 8 tokens issued \(2 admin, 6 anonymous\), 41 requests refused\. Most refusals in one hour: 41, at 2026-11-23 17:00 UTC\./,
    );
  });

  it('counts admin attempts throttled by the failed-admin limits as refused, and apart as throttled', () => {
    const thisHour = NOW - (NOW % HOUR);
    const series = tokenSeries(
      describeCounts('app', lastDay, [
        row(thisHour, 'token.refused', 'admin', 7, 'invalid_client'),
        row(thisHour, 'token.throttled', 'admin', 30, 'address'),
        row(thisHour, 'token.throttled', 'admin', 3, 'app'),
        row(thisHour - HOUR, 'token.issued', 'admin', 1),
      ]),
    );
    assert.deepEqual(series.buckets.at(-1), { start: thisHour, admin: 0, anonymous: 0, refused: 40, throttled: 33 });
    assert.deepEqual(series.buckets.at(-2), { start: thisHour - HOUR, admin: 1, anonymous: 0, refused: 0, throttled: 0 });
    assert.match(
      seriesSummary(series, IN_THE_LAST_DAY),
      /40 requests refused \(33 of them throttled after too many wrong secrets\)\. Most refusals in one hour: 40,/,
    );
    const svg = tokenChart(series, 'chart-throttled', 'Last 24 hours', IN_THE_LAST_DAY).text;
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
    const series = tokenSeries(describeCounts('app', lastMonth, [row(NOW - (NOW % DAY) - DAY, 'token.refused', 'anonymous', 7)]));
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
    describeCounts('app', lastDay, [
      row(thisHour, 'token.issued', 'admin', 3),
      row(thisHour - HOUR, 'token.refused', 'admin', 40, 'invalid_client'),
    ]),
  );
  const svg = tokenChart(series, 'chart-test', 'Last 24 hours', IN_THE_LAST_DAY).text;

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

  it('labels every fourth hour, on round hours', () => {
    const labels = [...svg.matchAll(/<text class="tick" x="[\d.]+" y="[\d.]+" text-anchor="middle"[^>]*>([^<]+)</g)].map(
      (match) => match[1],
    );
    assert.deepEqual(labels, ['20:00', '00:00', '04:00', '08:00', '12:00', '16:00']);
  });

  it('labels at most six buckets of any span, minutes on round minutes, days back from today', () => {
    const labels = (query: NonNullable<ReturnType<typeof chartQuery>>) => {
      const series: TokenSeries = tokenSeries(describeCounts('app', query, []));
      return [...labelledBuckets(series)].map((index) => bucketLabel(series.per, series.buckets[index]!.start));
    };
    const thisMinute = NOW - (NOW % MINUTE);
    assert.deepEqual(labels(chartQuery(thisMinute - 14 * MINUTE, NOW + 1)!), ['17:30', '17:35', '17:40']);
    assert.deepEqual(labels(chartQuery(thisMinute - 59 * MINUTE, NOW + 1)!), ['16:50', '17:00', '17:10', '17:20', '17:30', '17:40']);
    assert.deepEqual(labels(chartQuery(thisMinute - 119 * MINUTE, NOW + 1)!), ['16:00', '16:30', '17:00', '17:30']);
    const thisHour = NOW - (NOW % HOUR);
    assert.deepEqual(labels(chartQuery(thisHour - 47 * HOUR, thisHour + HOUR)!), ['00:00', '12:00', '00:00', '12:00']);
    const ninety = labels(chartQuery(NOW - 89 * DAY - (NOW % DAY), NOW + 1)!);
    assert.equal(ninety.length, 6);
    assert.equal(ninety.at(-1), '23 Nov');
  });

  it('draws minutes: their axis, their tooltips and their table', () => {
    const thisMinute = NOW - (NOW % MINUTE);
    const minutes = tokenSeries(
      describeCounts('app', chartQuery(thisMinute - 14 * MINUTE, NOW + 1)!, [
        row(thisMinute - 2 * MINUTE, 'token.refused', null, 9, 'invalid_token'),
      ]),
    );
    assert.equal(minutes.per, 'minute');
    assert.equal(minutes.buckets.length, 15);
    const drawn = tokenChart(minutes, 'chart-minutes', 'Last 15 minutes', 'In the last 15 minutes').text;
    assert.match(drawn, /data-per="minute"/);
    assert.match(drawn, />Minute \(UTC\)</);
    assert.match(drawn, />Per minute</);
    assert.match(drawn, /<title>2026-11-23 17:40 UTC: 9 requests refused<\/title>/);
    assert.match(drawn, /Most refusals in one minute: 9, at 2026-11-23 17:40 UTC\./);
    assert.match(drawn, /<summary>The numbers per minute<\/summary>/);
    assert.equal([...drawn.matchAll(/<tr><th scope="row">/g)].length, 15);
  });

  it('draws an empty chart with an axis when nothing happened', () => {
    const empty = tokenChart(tokenSeries(describeCounts('app', lastMonth, [])), 'chart-empty', 'Last 30 days', 'In the last 30 days').text;
    assert.doesNotMatch(empty, /class="bar /);
    assert.match(empty, /data-issued="0" data-refused="0" data-throttled="0"/);
    assert.match(empty, />0 issued, 0 refused</);
  });
});
