import { createServer } from 'node:http';

/** An OTLP receiver that answers every export with an empty (valid) response, and keeps nothing. */
export async function startOtlpReceiver(): Promise<{ tracingEnv(ratio: string): Record<string, string>; close(): void }> {
  const receiver = createServer((request, response) => {
    request.resume().on('end', () => response.writeHead(200, { 'content-type': 'application/x-protobuf' }).end());
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const address = receiver.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  return {
    /** `tessera serve`'s variables for tracing a `ratio` of the requests, exported here. */
    tracingEnv: (ratio) => ({
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`,
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: ratio,
    }),
    close: () => receiver.close(),
  };
}
