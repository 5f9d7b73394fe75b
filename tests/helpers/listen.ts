import type { Server } from 'node:net';

// Servers of the tests' own (a page server, an upstream behind a proxy, a recording proxy), on the
// loopback address.

/** Listens on 127.0.0.1, on a port the kernel picks; resolves with the server once it listens. */
export function listenOnLoopback<Listening extends Server>(server: Listening): Promise<Listening> {
  return new Promise((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', () => resolve(server)));
}

/** Stops the server listening and resolves once its connections have ended; nothing to do for `undefined`. */
export function closeServer(server: Server | undefined): Promise<void> {
  return new Promise((resolve) => (server === undefined ? resolve() : server.close(() => resolve())));
}
