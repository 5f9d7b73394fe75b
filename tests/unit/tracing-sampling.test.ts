import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseTraceparent } from '../../src/http/request-id.js';
import { requestSampler } from '../../src/tracing/sampling.js';

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const sampledParent = { traceparent: `00-${TRACE_ID}-00f067aa0ba902b7-01` };
const unsampledParent = { traceparent: `00-${TRACE_ID}-00f067aa0ba902b7-00` };

/** How many of `count` requests without a traceparent the sampler traces. */
function tracedOf(sampled: (headers: Record<string, string>) => boolean, count: number): number {
  let traced = 0;
  for (let i = 0; i < count; i++) if (sampled({})) traced++;
  return traced;
}

describe('parseTraceparent: W3C Trace Context, as OpenTelemetry’s propagator reads it', () => {
  it('reads the trace id and the sampled flag', () => {
    assert.deepEqual(parseTraceparent(sampledParent.traceparent), { traceId: TRACE_ID, sampled: true });
    assert.deepEqual(parseTraceparent(unsampledParent.traceparent), { traceId: TRACE_ID, sampled: false });
    assert.deepEqual(parseTraceparent(`01-${TRACE_ID}-00f067aa0ba902b7-03-later-fields`), { traceId: TRACE_ID, sampled: true });
  });

  it('refuses what the propagator refuses', () => {
    for (const invalid of [
      `ff-${TRACE_ID}-00f067aa0ba902b7-01`,
      `00-${'0'.repeat(32)}-00f067aa0ba902b7-01`,
      `00-${TRACE_ID}-${'0'.repeat(16)}-01`,
      `00-${TRACE_ID}-00f067aa0ba902b7-01-more`,
      `00-${TRACE_ID.toUpperCase()}-00f067aa0ba902b7-01`,
      `00-${TRACE_ID}-00f067aa0ba902b7`,
      '',
    ]) {
      assert.equal(parseTraceparent(invalid), undefined, invalid);
    }
  });
});

describe('requestSampler: the decision OTEL_TRACES_SAMPLER would make for a request’s span', () => {
  it('parentbased_always_on by default: a caller’s decision, every new trace', () => {
    const sampled = requestSampler({})!;
    assert.equal(sampled(sampledParent), true);
    assert.equal(sampled(unsampledParent), false);
    assert.equal(sampled({}), true);
    assert.equal(sampled({ traceparent: 'not one' }), true);
  });

  it('parentbased_traceidratio: a caller’s decision, and the ratio of new traces', () => {
    const sampled = requestSampler({ OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.1' })!;
    assert.equal(sampled(sampledParent), true);
    assert.equal(sampled(unsampledParent), false);
    const traced = tracedOf(sampled, 20_000);
    assert.ok(traced > 1_700 && traced < 2_300, `${traced} of 20,000 at 0.1`);
    assert.equal(tracedOf(requestSampler({ OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0' })!, 1_000), 0);
  });

  it('traceidratio: the ratio, on the caller’s trace id when there is one, whatever its flag', () => {
    const all = requestSampler({ OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '1' })!;
    assert.equal(all(unsampledParent), true);
    const none = requestSampler({ OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '0' })!;
    assert.equal(none(sampledParent), false);
    // The same trace id, the same decision: every service sampling by ratio keeps the same traces.
    const half = requestSampler({ OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.5' })!;
    const first = half(sampledParent);
    for (let i = 0; i < 10; i++) assert.equal(half(sampledParent), first);
  });

  it('always_on, always_off and parentbased_always_off', () => {
    assert.equal(requestSampler({ OTEL_TRACES_SAMPLER: 'always_on' })!(unsampledParent), true);
    assert.equal(requestSampler({ OTEL_TRACES_SAMPLER: 'always_off' })!(sampledParent), false);
    const parentOnly = requestSampler({ OTEL_TRACES_SAMPLER: 'parentbased_always_off' })!;
    assert.equal(parentOnly(sampledParent), true);
    assert.equal(parentOnly({}), false);
  });

  it('what the SDK does with wrong values: the default sampler, a ratio of 1', () => {
    assert.equal(requestSampler({ OTEL_TRACES_SAMPLER: 'jaeger_remote' })!({}), true);
    assert.equal(requestSampler({ OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '7' })!({}), true);
    assert.equal(requestSampler({ OTEL_TRACES_SAMPLER: 'parentbased_traceidratio' })!({}), true);
  });

  it('a traceparent is not read unless the W3C propagator is on; other propagators leave the SDK to decide', () => {
    assert.equal(requestSampler({ OTEL_PROPAGATORS: 'none' })!(unsampledParent), true);
    assert.equal(requestSampler({ OTEL_PROPAGATORS: 'tracecontext' })!(unsampledParent), false);
    assert.equal(requestSampler({ OTEL_PROPAGATORS: 'tracecontext,b3' }), undefined);
  });
});
