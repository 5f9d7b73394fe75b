import { STATUS_CODES, type IncomingHttpHeaders, type IncomingMessage, type OutgoingHttpHeaders } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { TesseraError } from 'tessera-tokens/internal/errors.js';
import { errorBody, errorHeaders } from 'tessera-tokens/internal/http/errors.js';

/**
 * Node hands a `CONNECT` request to the server's `connect` listener, never to its routes, and with
 * no listener closes the connection unanswered. This service opens no tunnels. A `CONNECT` to one of
 * its paths is answered as the routes answer any method the path does not allow (`405` with `Allow`,
 * after authentication under `/api/apps/{appId}/`; `404` for a path that does not exist); one to
 * another host (`CONNECT host:port`) is `405` with an empty `Allow`. Then the connection is closed.
 */
export function answerConnectRequests(app: FastifyInstance): void {
  app.server.on('connect', (request: IncomingMessage, socket: Duplex) => {
    socket.on('error', () => socket.destroy());
    answerConnect(app, request).then(
      (response) => socket.end(response),
      () => socket.destroy(),
    );
  });
}

async function answerConnect(app: FastifyInstance, request: IncomingMessage): Promise<Buffer> {
  const target = request.url ?? '';
  if (!target.startsWith('/')) return errorResponse(noTunnels([]));
  const routed = await app.inject({
    method: 'CONNECT',
    url: target,
    headers: withoutBodyHeaders(request.headers),
    ...(request.socket.remoteAddress === undefined ? {} : { remoteAddress: request.socket.remoteAddress }),
  });
  // A 2xx would tell the client its tunnel is open. Only forward authentication, which answers
  // every method, could give one.
  if (routed.statusCode < 300) return errorResponse(noTunnels(app.supportedMethods.filter((method) => method !== 'CONNECT')));
  return httpResponse(routed.statusCode, routed.headers, routed.rawPayload);
}

function noTunnels(allow: readonly string[]): TesseraError {
  return new TesseraError('METHOD_NOT_ALLOWED', 'This service opens no tunnels: CONNECT is not supported.', { allow });
}

/** A CONNECT has no body: what follows its head is the tunnel's first bytes. */
function withoutBodyHeaders(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  const { 'content-length': _length, 'transfer-encoding': _encoding, ...rest } = headers;
  return rest;
}

function errorResponse(error: TesseraError): Buffer {
  return httpResponse(error.status, errorHeaders(error), Buffer.from(errorBody(error)));
}

/** The bytes of a complete answer that closes the connection. */
function httpResponse(status: number, headers: OutgoingHttpHeaders, body: Buffer): Buffer {
  const lines = [`HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}`];
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || FRAMING_HEADERS.has(name.toLowerCase())) continue;
    for (const one of [value].flat()) lines.push(`${name}: ${one}`);
  }
  lines.push(`content-length: ${body.length}`, 'connection: close');
  return Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1'), body]);
}

const FRAMING_HEADERS = new Set(['content-length', 'transfer-encoding', 'connection', 'keep-alive']);
