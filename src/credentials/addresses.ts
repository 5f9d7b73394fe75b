import { BlockList, isIPv4, isIPv6 } from 'node:net';

/** Entries a credential's address list may have: every input is size-limited. */
export const MAX_ALLOWED_ADDRESSES = 32;

/** An address list, checked: canonical CIDRs (`10.0.0.0/8`, `2001:db8::/32`, `192.0.2.7/32`), or the first entry that is not one. */
export type CheckedAddressList = { cidrs: string[] } | { problem: string };

/**
 * Parses a credential's client addresses: each an IPv4 or IPv6 CIDR, or a single address (taken as
 * /32 or /128). An entry with bits set past its prefix (`10.0.0.1/8`) is refused rather than
 * rounded, since it may not say what was meant. Canonical: IPv6 in its shortest form, in order,
 * no repeats.
 */
export function parseAddressList(entries: readonly string[]): CheckedAddressList {
  if (entries.length > MAX_ALLOWED_ADDRESSES) return { problem: `at most ${MAX_ALLOWED_ADDRESSES} entries` };
  const cidrs: string[] = [];
  for (const entry of entries) {
    const cidr = canonicalCidr(entry);
    if (cidr === undefined) return { problem: entry };
    if (!cidrs.includes(cidr)) cidrs.push(cidr);
  }
  return { cidrs };
}

function canonicalCidr(entry: string): string | undefined {
  if (entry.length > 50) return undefined;
  const slash = entry.indexOf('/');
  const address = slash < 0 ? entry : entry.slice(0, slash);
  const prefixText = slash < 0 ? undefined : entry.slice(slash + 1);
  const family = isIPv4(address) && /^(?:0|[1-9][0-9]*)(?:\.(?:0|[1-9][0-9]*)){3}$/.test(address) ? 4 : isIPv6(address) ? 6 : 0;
  if (family === 0) return undefined;
  const bits = family === 4 ? 32 : 128;
  if (prefixText !== undefined && !/^(?:0|[1-9][0-9]{0,2})$/.test(prefixText)) return undefined;
  const prefix = prefixText === undefined ? bits : Number(prefixText);
  if (prefix > bits) return undefined;
  const canonical = family === 4 ? address : canonicalIpv6(address);
  if (canonical === undefined) return undefined;
  const value = family === 4 ? ipv4Value(address) : ipv6Value(canonical);
  if (value === undefined) return undefined;
  const hostBits = BigInt(bits - prefix);
  if (hostBits > 0n && value % (1n << hostBits) !== 0n) return undefined;
  return `${canonical}/${prefix}`;
}

/**
 * Whether every address of the canonical CIDR `inner` is in the canonical CIDR `outer`: the same
 * family, a prefix at least as long, and the same network on `outer`'s prefix.
 */
export function cidrWithin(inner: string, outer: string): boolean {
  const [innerNetwork, innerPrefix] = splitCidr(inner);
  const [outerNetwork, outerPrefix] = splitCidr(outer);
  const family = innerNetwork.includes(':') ? 6 : 4;
  if (family !== (outerNetwork.includes(':') ? 6 : 4) || innerPrefix < outerPrefix) return false;
  const value = (network: string) => (family === 4 ? ipv4Value(network) : ipv6Value(network));
  const hostBits = BigInt((family === 4 ? 32 : 128) - outerPrefix);
  const [a, b] = [value(innerNetwork), value(outerNetwork)];
  return a !== undefined && b !== undefined && a >> hostBits === b >> hostBits;
}

function splitCidr(cidr: string): [network: string, prefix: number] {
  const slash = cidr.indexOf('/');
  return [cidr.slice(0, slash), Number(cidr.slice(slash + 1))];
}

/** The address in its shortest form, as the URL parser writes it; undefined for one it refuses (a zone, `fe80::1%eth0`). */
function canonicalIpv6(address: string): string | undefined {
  if (address.includes('%')) return undefined;
  try {
    return new URL(`http://[${address}]`).hostname.slice(1, -1);
  } catch {
    return undefined;
  }
}

function ipv4Value(address: string): bigint {
  return address.split('.').reduce((value, octet) => (value << 8n) | BigInt(octet), 0n);
}

/** The value of an IPv6 address in canonical form (`canonicalIpv6`: every group in hex, an embedded IPv4 address written as two). */
function ipv6Value(canonical: string): bigint | undefined {
  const [head = '', tail] = canonical.includes('::') ? canonical.split('::') : [canonical, undefined];
  const headGroups = head === '' ? [] : head.split(':');
  const tailGroups = tail === undefined || tail === '' ? [] : tail.split(':');
  const groups =
    tail === undefined ? headGroups : [...headGroups, ...Array<string>(8 - headGroups.length - tailGroups.length).fill('0'), ...tailGroups];
  if (groups.length !== 8) return undefined;
  return groups.reduce((value, group) => (value << 16n) | BigInt(`0x${group}`), 0n);
}

/** The address lists in force, as Node's `BlockList`s, one per list (lists are frozen with their record). */
const lists = new WeakMap<readonly string[], BlockList>();

/**
 * Whether `address` (the client's, as the server saw it: behind TRUSTED_PROXIES, from
 * `X-Forwarded-For`) is on the list; an empty list allows any address. An IPv4 address that a
 * dual-stack socket reports as IPv6 (`::ffff:192.0.2.7`) is checked as IPv4.
 */
export function addressAllowed(cidrs: readonly string[], address: string | null): boolean {
  if (cidrs.length === 0) return true;
  if (address === null) return false;
  let list = lists.get(cidrs);
  if (list === undefined) {
    list = new BlockList();
    for (const cidr of cidrs) {
      const [network, prefix] = cidr.split('/') as [string, string];
      list.addSubnet(network, Number(prefix), network.includes(':') ? 'ipv6' : 'ipv4');
    }
    lists.set(cidrs, list);
  }
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped !== null) return list.check(mapped[1]!, 'ipv4');
  if (isIPv4(address)) return list.check(address, 'ipv4');
  return isIPv6(address) && list.check(address, 'ipv6');
}
