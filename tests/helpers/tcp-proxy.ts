import { createConnection, createServer, type Server, type Socket } from 'node:net';

/**
 * A TCP proxy in front of a real server (PostgreSQL), that a test can cut and restore: the way to
 * make a real database unreachable for one process without touching the server other tests use.
 *
 * It can also hold the server's answers for `delayMs` (in order), except on connections that asked
 * to `LISTEN`: a process behind it then gets notifications at once and query results late, which
 * makes a race deterministic (a read answered before a change committed arrives after the change's
 * notification).
 */
export class TcpProxy {
  #server: Server | undefined;
  readonly #sockets = new Set<Socket>();
  port = 0;
  /** How long answers are held on ordinary connections; 0 passes them on at once. */
  delayMs = 0;

  constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {}

  /** A proxy (not yet started) in front of the PostgreSQL server a database URL names. */
  static toDatabase(databaseUrl: string): TcpProxy {
    const target = new URL(databaseUrl);
    return new TcpProxy(target.hostname, Number(target.port || 5432));
  }

  async start(): Promise<void> {
    const server = createServer((client) => {
      const upstream = createConnection(this.targetPort, this.targetHost);
      let listening = false;
      let tail = Promise.resolve();
      for (const socket of [client, upstream]) {
        this.#sockets.add(socket);
        socket.on('close', () => {
          this.#sockets.delete(socket);
          client.destroy();
          upstream.destroy();
        });
        socket.on('error', () => {
          client.destroy();
          upstream.destroy();
        });
      }
      client.on('data', (chunk: Buffer) => {
        if (chunk.includes('LISTEN ')) listening = true;
        upstream.write(chunk);
      });
      upstream.on('data', (chunk: Buffer) => {
        const releaseAt = Date.now() + (listening ? 0 : this.delayMs);
        tail = tail.then(async () => {
          const wait = releaseAt - Date.now();
          if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
          if (!client.destroyed) client.write(chunk);
        });
      });
    });
    await new Promise<void>((resolve, reject) => server.once('error', reject).listen(this.port, '127.0.0.1', resolve));
    const address = server.address();
    if (address !== null && typeof address === 'object') this.port = address.port;
    this.#server = server;
  }

  /** Drops every connection and refuses new ones, as a database that went down. */
  async cut(): Promise<void> {
    const server = this.#server;
    this.#server = undefined;
    for (const socket of this.#sockets) socket.destroy();
    if (server !== undefined) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** Accepts connections again, on the same port. */
  async restore(): Promise<void> {
    await this.start();
  }

  /** A database URL whose host and port go through the proxy. */
  urlFor(databaseUrl: string): string {
    const url = new URL(databaseUrl);
    url.hostname = '127.0.0.1';
    url.port = String(this.port);
    return url.toString();
  }
}
