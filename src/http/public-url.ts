import { isIPv4 } from 'node:net';
import type { Server } from 'node:net';

/**
 * Where clients reach the service: `PUBLIC_URL` when it is configured; otherwise, when the server
 * listens on a loopback address (the default `HOST`, a laptop), the URL it listens on, as the start-up
 * banner prints it; otherwise undefined. Never from a request's `Host` header, which the client chooses.
 */
export function publicBaseUrl(configured: string | undefined, server: Server): string | undefined {
  if (configured !== undefined) return configured;
  const address = server.address();
  if (address === null || typeof address === 'string' || !isLoopback(address.address)) return undefined;
  const host = isIPv4(address.address) ? address.address : `[${address.address}]`;
  return `http://${host}:${address.port}`;
}

function isLoopback(address: string): boolean {
  return address.startsWith('127.') || address === '::1';
}
