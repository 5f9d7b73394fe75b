import { connect } from 'node:net';
import assert from 'node:assert/strict';
import { parseJson, type JsonResponse } from './http.js';

/**
 * HTTP spoken by hand over node:net, for what fetch refuses to send: literal `..` and `%zz` in a path,
 * raw UTF-8 or control bytes in a header, lying Content-Length, malformed request lines.
 */

export interface RawResponse extends JsonResponse {
  /** Everything the server wrote, as latin1. */
  raw: string;
}

export interface RawOptions {
  /** Give up (reject) after this long without a complete answer. */
  timeoutMs?: number;
  /** The request was HEAD: the response has no body whatever its Content-Length says. */
  head?: boolean;
  /** Half-close the connection after writing (the server then sees the end of the request stream). */
  endAfterWrite?: boolean;
}

/**
 * Writes `data` as-is and reads the FIRST response. Resolves `null` when the server closed the
 * connection without answering; rejects when nothing complete arrived within `timeoutMs` (a hang).
 */
export function rawHttp(baseUrl: string, data: string | Buffer, options: RawOptions = {}): Promise<RawResponse | null> {
  const { hostname, port } = new URL(baseUrl);
  const timeoutMs = options.timeoutMs ?? 5_000;
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port) });
    let received = Buffer.alloc(0);
    let settled = false;
    let closed = false;
    const finish = () => {
      if (settled) return;
      const parsed = parseResponse(received, options.head === true, closed);
      if (parsed === 'incomplete' && !closed) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      if (parsed !== 'incomplete') resolve(parsed);
      else if (received.length === 0) resolve(null);
      else reject(new Error(`incomplete HTTP response: ${received.toString('latin1').slice(0, 500)}`));
    };
    const onClosed = () => {
      closed = true;
      finish();
    };
    const timer = setTimeout(() => {
      if (settled) return;
      settled = true;
      socket.destroy();
      reject(new Error(`no complete response within ${timeoutMs} ms (a hang); got: ${received.toString('latin1').slice(0, 300)}`));
    }, timeoutMs);
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      finish();
    });
    socket.on('end', onClosed);
    socket.on('close', onClosed);
    // A reset after (or instead of) an answer: judge what arrived.
    socket.on('error', onClosed);
    socket.write(typeof data === 'string' ? Buffer.from(data, 'utf8') : data, () => {
      if (options.endAfterWrite === true) socket.end();
    });
  });
}

/**
 * Writes `data` and reads until the server closes the connection; resolves with the first response
 * in what arrived (`null` if nothing did), rejects if the connection is still open after `timeoutMs`.
 */
export function rawHttpUntilClosed(baseUrl: string, data: string | Buffer, timeoutMs = 5_000): Promise<RawResponse | null> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port) });
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(
        new Error(
          `the server kept the connection open for ${timeoutMs} ms; got: ${Buffer.concat(chunks).toString('latin1').slice(0, 300)}`,
        ),
      );
    }, timeoutMs);
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', () => {});
    socket.on('close', () => {
      clearTimeout(timer);
      const received = Buffer.concat(chunks);
      const parsed = parseResponse(received, false, true);
      resolve(parsed === 'incomplete' ? null : parsed);
    });
    socket.write(typeof data === 'string' ? Buffer.from(data, 'utf8') : data);
  });
}

/** A request built from parts, sent verbatim with `Connection: close` and the Content-Length of `body` unless given. */
export function rawRequest(
  baseUrl: string,
  request: { method: string; path: string; headers?: Record<string, string | Buffer>; body?: string | Buffer },
  options: RawOptions = {},
): Promise<RawResponse | null> {
  const body = request.body === undefined ? undefined : typeof request.body === 'string' ? Buffer.from(request.body) : request.body;
  const headers: Record<string, string | Buffer> = { host: new URL(baseUrl).host, connection: 'close', ...request.headers };
  if (body !== undefined && !Object.keys(headers).some((name) => name.toLowerCase() === 'content-length')) {
    headers['content-length'] = String(body.length);
  }
  const parts: Buffer[] = [Buffer.from(`${request.method} ${request.path} HTTP/1.1\r\n`)];
  for (const [name, value] of Object.entries(headers)) {
    parts.push(Buffer.from(`${name}: `), typeof value === 'string' ? Buffer.from(value, 'utf8') : value, Buffer.from('\r\n'));
  }
  parts.push(Buffer.from('\r\n'));
  if (body !== undefined) parts.push(body);
  return rawHttp(baseUrl, Buffer.concat(parts), { head: request.method === 'HEAD', ...options });
}

/** A header line as written: a name in its own case, and a value. */
export type HeaderLine = readonly [name: string, value: string];

/**
 * A request whose header lines go out as listed, in order, each name in its own case and repeated
 * when listed twice (what neither fetch nor `rawRequest` can send): `Host: x`, the lines, the
 * Content-Length of `body` if there is one, `Connection: close`. Asserts that an answer came.
 */
export async function rawWithHeaderLines(
  baseUrl: string,
  request: { method: string; path: string; lines: readonly HeaderLine[]; body?: string },
): Promise<RawResponse> {
  const lines = [...request.lines];
  if (request.body !== undefined) lines.push(['Content-Length', String(Buffer.byteLength(request.body))]);
  const head = lines.map(([name, value]) => `${name}: ${value}\r\n`).join('');
  const response = await rawHttp(
    baseUrl,
    `${request.method} ${request.path} HTTP/1.1\r\nHost: x\r\n${head}Connection: close\r\n\r\n${request.body ?? ''}`,
  );
  assert.ok(response !== null, 'the server closed the connection without answering');
  return response;
}

/** One HTTP response from the bytes received so far, or `incomplete` (`ended`: the connection has closed). */
export function parseResponse(data: Buffer, head: boolean, ended: boolean): RawResponse | 'incomplete' {
  const headerEnd = data.indexOf('\r\n\r\n');
  if (headerEnd < 0) return 'incomplete';
  const lines = data.subarray(0, headerEnd).toString('latin1').split('\r\n');
  const status = /^HTTP\/1\.[01] (\d{3})/.exec(lines[0] ?? '');
  if (status === null) return 'incomplete';
  const headers = new Headers();
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':');
    if (colon > 0) headers.append(line.slice(0, colon).trim(), line.slice(colon + 1).trim());
  }
  let rest = data.subarray(headerEnd + 4);
  let bodyBytes: Buffer;
  const length = headers.get('content-length');
  if (head) {
    bodyBytes = Buffer.alloc(0);
  } else if (length !== null) {
    if (rest.length < Number(length)) return 'incomplete';
    bodyBytes = rest.subarray(0, Number(length));
  } else if ((headers.get('transfer-encoding') ?? '').toLowerCase().includes('chunked')) {
    const chunks: Buffer[] = [];
    for (;;) {
      const lineEnd = rest.indexOf('\r\n');
      if (lineEnd < 0) return 'incomplete';
      const size = Number.parseInt(rest.subarray(0, lineEnd).toString('latin1'), 16);
      if (Number.isNaN(size)) return 'incomplete';
      if (size === 0) break;
      if (rest.length < lineEnd + 2 + size + 2) return 'incomplete';
      chunks.push(rest.subarray(lineEnd + 2, lineEnd + 2 + size));
      rest = rest.subarray(lineEnd + 2 + size + 2);
    }
    bodyBytes = Buffer.concat(chunks);
  } else {
    if (!ended) return 'incomplete';
    bodyBytes = rest;
  }
  const text = bodyBytes.toString('utf8');
  const body = parseJson(text);
  return { status: Number(status[1]), headers, body, text, raw: data.toString('latin1') };
}
