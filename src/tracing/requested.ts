/**
 * Whether `tessera serve` traces, from the standard OpenTelemetry variables alone: an OTLP endpoint
 * (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) or an exporter named in
 * `OTEL_TRACES_EXPORTER` (`otlp`, `console`, `zipkin`), unless that is `none` or `OTEL_SDK_DISABLED`
 * is true. Otherwise nothing of OpenTelemetry is loaded, and no request pays for it.
 */
export function tracingRequested(env: NodeJS.ProcessEnv): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return false;
  const exporters = (env.OTEL_TRACES_EXPORTER ?? '')
    .split(',')
    .map((name) => name.trim().toLowerCase())
    .filter((name) => name !== '');
  if (exporters.length > 0) return !(exporters.length === 1 && exporters[0] === 'none');
  return [env.OTEL_EXPORTER_OTLP_ENDPOINT, env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT].some((value) => (value?.trim() ?? '') !== '');
}
