import type { IncomingHttpHeaders } from 'node:http';
import { ROOT_CONTEXT } from '@opentelemetry/api';
import { tracing } from '@opentelemetry/sdk-node';
import { parseTraceparent } from '../http/request-id.js';

/** The samplers `OTEL_TRACES_SAMPLER` may name that decide a request's trace by itself. */
const SAMPLERS = ['always_on', 'always_off', 'traceidratio', 'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio'];

/**
 * Whether a request is traced, decided from its headers before Fastify sees it, as the standard
 * sampler named by `OTEL_TRACES_SAMPLER` (and its `OTEL_TRACES_SAMPLER_ARG`) would decide for the
 * request's span: a parent-based one follows the sampled flag of a W3C `traceparent`, a ratio is
 * applied to the trace id (the caller's, or a new trace's). What the SDK says of a wrong value, this
 * says too: an unknown sampler is the default, `parentbased_always_on`; a ratio outside 0–1, or
 * none, is 1.
 *
 * Undefined when the decision cannot be made from `traceparent`: with `OTEL_PROPAGATORS` naming a
 * propagator other than W3C's (`b3`, `jaeger`), the SDK decides, request by request, as it would
 * without Tessera.
 */
export function requestSampler(env: NodeJS.ProcessEnv): ((headers: IncomingHttpHeaders) => boolean) | undefined {
  const propagators = list(env.OTEL_PROPAGATORS);
  if (propagators.some((name) => !['tracecontext', 'baggage', 'none'].includes(name))) return undefined;
  const followsParent = propagators.length === 0 || propagators.includes('tracecontext');
  const name = env.OTEL_TRACES_SAMPLER?.trim().toLowerCase() || 'parentbased_always_on';
  const sampler = SAMPLERS.includes(name) ? name : 'parentbased_always_on';
  const argument = Number(env.OTEL_TRACES_SAMPLER_ARG?.trim() || 'NaN');
  const ratio = Number.isFinite(argument) && argument >= 0 && argument <= 1 ? argument : 1;
  const byTraceId = new tracing.TraceIdRatioBasedSampler(ratio);
  const root = sampler.endsWith('always_on') ? () => true : sampler.endsWith('always_off') ? () => false : () => Math.random() < ratio;
  return (headers) => {
    const parent = followsParent && typeof headers.traceparent === 'string' ? parseTraceparent(headers.traceparent) : undefined;
    if (sampler.startsWith('parentbased_') && parent !== undefined) return parent.sampled;
    if (sampler === 'traceidratio' && parent !== undefined) {
      return byTraceId.shouldSample(ROOT_CONTEXT, parent.traceId).decision === tracing.SamplingDecision.RECORD_AND_SAMPLED;
    }
    return root();
  };
}

function list(value: string | undefined): string[] {
  return (value ?? '')
    .split(',')
    .map((name) => name.trim().toLowerCase())
    .filter((name) => name !== '');
}
