import { isIP } from 'node:net';
import type { FastifyInstance } from 'fastify';

/**
 * `X-Forwarded-For` cut to the entries that are IP addresses: from the right (the hop nearest to
 * this server) up to, not including, the first entry that is not one; undefined when the nearest
 * entry already is not. A proxy appends the address it saw, which is always an IP address, so an
 * entry that is not one was written by someone else, and so was everything to its left: the client
 * address is then the hop that passed it on. Entries come back trimmed, joined with `, `; empty
 * ones are dropped.
 */
export function forwardedAddresses(header: string): string | undefined {
  if (!header.includes(',')) {
    const entry = header.trim();
    return isForwardedAddress(entry) ? entry : undefined;
  }
  // Empty list elements are ignored (RFC 9110 §5.6.1).
  const entries = header
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  let first = entries.length;
  while (first > 0 && isForwardedAddress(entries[first - 1]!)) first--;
  return first === entries.length ? undefined : entries.slice(first).join(', ');
}

/** An IP address, without a zone id (`%eth0` means something only on the host that has the interface). */
function isForwardedAddress(entry: string): boolean {
  return isIP(entry) !== 0 && !entry.includes('%');
}

/**
 * With trusted proxies, `X-Forwarded-For` is cut to what `forwardedAddresses` keeps before anything
 * reads the client address (`request.ip`), so that the client address is always an IP address: the
 * trust check of `trustProxy` is never asked about the leftmost entry, which becomes the client
 * address when every hop to its right is trusted, whatever it is.
 */
export function keepForwardedAddressesOnly(app: FastifyInstance): void {
  app.addHook('onRequest', (request, _reply, done) => {
    // The raw headers: where `request.ip` reads the header.
    const headers = request.raw.headers;
    const header = headers['x-forwarded-for'];
    if (typeof header === 'string') {
      const kept = forwardedAddresses(header);
      if (kept === undefined) delete headers['x-forwarded-for'];
      else if (kept !== header) headers['x-forwarded-for'] = kept;
    }
    done();
  });
}
