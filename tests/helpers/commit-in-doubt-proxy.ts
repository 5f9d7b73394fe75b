import { createConnection, createServer, type Server, type Socket } from 'node:net';

/**
 * A TCP proxy in front of PostgreSQL that makes a commit in doubt on demand: once armed, the next
 * statement whose CommandComplete tag matches is let through to the server, which runs and commits
 * it; then, when the server says it is ready for the next query outside a transaction (the
 * statement's transaction committed: its own, implicit one, or the explicit one it ran in, at the
 * client's COMMIT), the client's connection is cut without the answer to what committed. The client
 * sees its connection lost, and cannot tell whether the statement committed: it did. A statement in
 * an explicit transaction is answered as usual, and so is what follows it until the commit.
 *
 * It reads the server's side as PostgreSQL's messages (a type byte, then a 4-byte length that counts
 * itself), which every message from the server is, when the client does not ask for TLS.
 */
export class CommitInDoubtProxy {
  #server: Server | undefined;
  readonly #sockets = new Set<Socket>();
  #armed: RegExp | undefined;
  #cuts = 0;
  port = 0;

  constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {}

  static toDatabase(databaseUrl: string): CommitInDoubtProxy {
    const target = new URL(databaseUrl);
    return new CommitInDoubtProxy(target.hostname, Number(target.port || 5432));
  }

  /** The connections cut so far, one per statement armed for. */
  get cuts(): number {
    return this.#cuts;
  }

  /**
   * The next statement whose CommandComplete tag (`INSERT 0 3`) matches `tag` commits, and the answer
   * to what committed it (the statement itself, or the COMMIT of its transaction) is lost.
   */
  loseAnswerAfterCommit(tag: RegExp): void {
    this.#armed = tag;
  }

  async start(): Promise<void> {
    const server = createServer((client) => {
      const upstream = createConnection(this.targetPort, this.targetHost);
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
      client.on('data', (chunk: Buffer) => upstream.write(chunk));
      let pending = Buffer.alloc(0);
      /**
       * The statement armed for completed on this connection: its commit comes with the next
       * ReadyForQuery outside a transaction. What the server answered since is withheld meanwhile.
       */
      let completed = false;
      let withheld: Buffer[] = [];
      upstream.on('data', (chunk: Buffer) => {
        pending = Buffer.concat([pending, chunk]);
        const passOn: Buffer[] = [];
        while (pending.length >= 5 && pending.length >= 1 + pending.readUInt32BE(1)) {
          const message = pending.subarray(0, 1 + pending.readUInt32BE(1));
          pending = pending.subarray(message.length);
          const type = String.fromCharCode(message[0]!);
          if (type === 'C' && this.#armed?.test(message.subarray(5).toString('utf8').replace(/\0$/, '')) === true) {
            this.#armed = undefined;
            completed = true;
          }
          if (!completed) {
            passOn.push(message);
          } else if (type === 'Z') {
            // ReadyForQuery's status: idle (I), in a transaction (T), in a failed one (E).
            const status = String.fromCharCode(message[5]!);
            if (status === 'I') {
              this.#cuts++;
              client.write(Buffer.concat(passOn), () => {
                client.destroy();
                upstream.destroy();
              });
              return;
            }
            // Inside a transaction, not committed yet: answered as usual, until the transaction ends.
            passOn.push(...withheld, message);
            withheld = [];
            // A transaction that failed commits nothing: there is no commit to lose.
            if (status === 'E') completed = false;
          } else {
            // A part of an answer: lost if a commit follows it before the next ReadyForQuery.
            withheld.push(message);
          }
        }
        if (passOn.length > 0) client.write(Buffer.concat(passOn));
      });
    });
    await new Promise<void>((resolve, reject) => server.once('error', reject).listen(this.port, '127.0.0.1', resolve));
    const address = server.address();
    if (address !== null && typeof address === 'object') this.port = address.port;
    this.#server = server;
  }

  async stop(): Promise<void> {
    const server = this.#server;
    this.#server = undefined;
    for (const socket of this.#sockets) socket.destroy();
    if (server !== undefined) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** A database URL whose host and port go through the proxy. */
  urlFor(databaseUrl: string): string {
    const url = new URL(databaseUrl);
    url.hostname = '127.0.0.1';
    url.port = String(this.port);
    return url.toString();
  }
}
