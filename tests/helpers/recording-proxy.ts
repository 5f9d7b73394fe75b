import { createServer, request as forward, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { closeServer, listenOnLoopback } from './listen.js';

/** A request as a client sent it. */
export interface RecordedRequest {
  method: string;
  /** Path and query. */
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/**
 * An HTTP proxy in front of a test server that records every request it passes on, so that a test
 * checks what a client library put on the wire (which client authentication it used), not only what
 * it got back. The client's `Host` header is passed on unchanged: the server must not build URLs from it.
 */
export class RecordingProxy {
  readonly requests: RecordedRequest[] = [];
  /** Where requests go, e.g. http://127.0.0.1:40123; set before the first request. */
  target = '';
  baseUrl = '';
  #server: Server | undefined;

  async start(): Promise<void> {
    const server = createServer((incoming, outgoing) => {
      const chunks: Buffer[] = [];
      incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
      incoming.on('end', () => {
        const body = Buffer.concat(chunks);
        this.requests.push({
          method: incoming.method ?? '',
          url: incoming.url ?? '',
          headers: incoming.headers,
          body: body.toString('utf8'),
        });
        const upstream = forward(
          new URL(incoming.url ?? '/', this.target),
          { method: incoming.method, headers: incoming.headers },
          (answer) => {
            outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
            answer.pipe(outgoing);
          },
        );
        upstream.on('error', () => outgoing.destroy());
        upstream.end(body);
      });
    });
    await listenOnLoopback(server);
    this.#server = server;
    this.baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  /** The last request whose path (without the query) ends with `suffix`. */
  last(suffix: string): RecordedRequest {
    const found = this.requests.findLast((request) => request.url.split('?')[0]!.endsWith(suffix));
    if (found === undefined) throw new Error(`no request to …${suffix} was recorded`);
    return found;
  }

  async close(): Promise<void> {
    const server = this.#server;
    if (server === undefined) return;
    server.closeAllConnections();
    await closeServer(server);
  }
}
