import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { BlockList, isIP } from 'node:net';
import { TesseraError } from 'tessera-tokens/internal/errors.js';

/**
 * Where webhooks may be sent. By default only `https` URLs whose host resolves to public addresses:
 * never loopback, private, link-local (the cloud metadata service at 169.254.169.254), shared,
 * multicast or reserved ranges, checked when a webhook is made and again at each delivery, on the
 * address the connection is then made to (DNS can change in between). The operator may allow `http`
 * (`WEBHOOK_ALLOW_HTTP=1`) and private addresses (`WEBHOOK_ALLOW_PRIVATE=1`: a receiver on the same
 * network, the tests).
 */
export interface DestinationPolicy {
  allowHttp: boolean;
  allowPrivate: boolean;
}

export const SAFE_DESTINATIONS: Readonly<DestinationPolicy> = Object.freeze({ allowHttp: false, allowPrivate: false });

/** The longest webhook URL. */
export const MAX_WEBHOOK_URL_LENGTH = 2048;

const NOT_PUBLIC = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  NOT_PUBLIC.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['64:ff9b::', 96],
  ['64:ff9b:1::', 48],
  ['100::', 64],
  ['2001::', 23],
  ['2001:db8::', 32],
  ['2002::', 16],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const) {
  NOT_PUBLIC.addSubnet(network, prefix, 'ipv6');
}

/** Whether an address is one a webhook may not reach by default (an IPv4-mapped IPv6 address as its IPv4 one). */
export function isNotPublic(address: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
  if (mapped !== undefined) return NOT_PUBLIC.check(mapped, 'ipv4');
  const family = isIP(address);
  if (family === 0) return true;
  return NOT_PUBLIC.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

/** A webhook URL as given, checked for its form: absolute, `https` (or `http` if allowed), no credentials, not too long. */
export function parseWebhookUrl(value: unknown, policy: DestinationPolicy): URL {
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_WEBHOOK_URL_LENGTH) {
    throw invalid(`url must be an absolute URL of at most ${MAX_WEBHOOK_URL_LENGTH} characters.`);
  }
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw invalid('url must be an absolute URL, such as https://hooks.example.com/tessera.');
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && policy.allowHttp)) {
    throw invalid(
      policy.allowHttp
        ? 'url must be an http or https URL.'
        : 'url must be an https URL (the operator allows http with WEBHOOK_ALLOW_HTTP=1).',
    );
  }
  if (url.username !== '' || url.password !== '') throw invalid('url must not carry a user name or password.');
  url.hash = '';
  return url;
}

/** What a lookup found that a webhook may not reach. */
export class DestinationRefused extends Error {
  readonly code = 'EDESTINATION';
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;
export type Lookup = (hostname: string, options: LookupOptions, callback: LookupCallback) => void;

/**
 * A `lookup` for `http.request` that refuses, unless the policy allows private addresses, a host
 * whose addresses include one that is not public: the check is on the addresses the connection is
 * made to, so DNS changing between the check and the connection changes nothing.
 */
export function checkedLookup(policy: DestinationPolicy, resolve: typeof dnsLookup = dnsLookup): Lookup {
  return (hostname, options, callback) => {
    resolve(hostname, { ...options, all: true }, (error, addresses) => {
      if (error !== null) return callback(error, []);
      const found = addresses;
      const refused = policy.allowPrivate ? undefined : found.find((entry) => isNotPublic(entry.address));
      if (refused !== undefined) {
        return callback(new DestinationRefused(`${hostname} resolves to ${refused.address}, which is not a public address`), []);
      }
      if (options.all === true) return callback(null, found);
      const first = found[0];
      if (first === undefined) return callback(new DestinationRefused(`${hostname} resolves to no address`), []);
      callback(null, first.address, first.family);
    });
  };
}

/** Resolves a webhook URL's host as a delivery would, for its creation: `invalid_request` saying why it cannot be reached. */
export async function checkDestination(url: URL, policy: DestinationPolicy, resolve: typeof dnsLookup = dnsLookup): Promise<void> {
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const lookup = checkedLookup(policy, resolve);
  await new Promise<void>((done, fail) =>
    lookup(host, { all: true }, (error) => {
      if (error === null) return done();
      fail(
        error instanceof DestinationRefused
          ? invalid(`url: ${error.message} (the operator allows private addresses with WEBHOOK_ALLOW_PRIVATE=1).`)
          : invalid(`url: its host ${host} cannot be resolved (${error.code ?? error.message}).`),
      );
    }),
  );
}

function invalid(message: string): TesseraError {
  return new TesseraError('invalid_request', message, { field: 'url' });
}
