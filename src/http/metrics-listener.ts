import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { notFound } from 'tessera-tokens/internal/error-catalogue.js';
import { TesseraError } from 'tessera-tokens/internal/errors.js';
import { errorBody, errorHeaders } from 'tessera-tokens/internal/http/errors.js';

/** Renders the metrics as Prometheus text. */
export type Scrape = () => Promise<{ contentType: string; body: string }>;

export interface MetricsListener {
  /** e.g. http://127.0.0.1:9464/metrics */
  readonly url: string;
  close(): Promise<void>;
}

/**
 * The metrics' own listener (METRICS_HOST, METRICS_PORT): `GET /metrics`, and 404 for anything else.
 * Plain `node:http` rather than a second Fastify: one path, no body, no plugins, and none of the API
 * server's hooks; it also keeps the scrapes out of `tessera_http_request_duration_seconds`.
 */
export async function listenForMetrics(scrape: Scrape, host: string, port: number): Promise<MetricsListener> {
  const server = createServer((request, response) => void answer(scrape, request, response));
  // A scrape is one short request: a client holding a connection gets little time to.
  server.headersTimeout = 5_000;
  server.requestTimeout = 10_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  const boundPort = typeof address === 'object' && address !== null ? address.port : port;
  const shownHost = ['0.0.0.0', '::'].includes(host) ? '127.0.0.1' : host;
  return {
    url: `http://${shownHost.includes(':') ? `[${shownHost}]` : shownHost}:${boundPort}/metrics`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      }),
  };
}

async function answer(scrape: Scrape, request: IncomingMessage, response: ServerResponse): Promise<void> {
  const path = (request.url ?? '').split('?')[0];
  if (path !== '/metrics') return sendError(response, notFound());
  if (request.method !== 'GET' && request.method !== 'HEAD') {
    return sendError(response, new TesseraError('METHOD_NOT_ALLOWED', 'Only GET is answered here.', { allow: ['GET', 'HEAD'] }));
  }
  try {
    const { contentType, body } = await scrape();
    response.writeHead(200, { 'content-type': contentType, 'content-length': Buffer.byteLength(body), 'cache-control': 'no-store' });
    response.end(request.method === 'HEAD' ? undefined : body);
  } catch {
    sendError(response, new TesseraError('INTERNAL_ERROR', 'The metrics could not be collected.'));
  }
}

function sendError(response: ServerResponse, error: TesseraError): void {
  const body = errorBody(error);
  response.writeHead(error.status, { ...errorHeaders(error), 'content-length': Buffer.byteLength(body) });
  response.end(body);
}
