import { isIPv4, isIPv6 } from 'node:net';

const MAPPED_PREFIX = '::ffff:';
const COLON = 0x3a;
const DOT = 0x2e;
const ZEROS: readonly number[] = [0, 0, 0, 0, 0, 0, 0, 0];

/**
 * The key under which per-address limits count a client address. An IPv4 address is its own key.
 * An IPv6 address counts by its /64 (`2001:db8:0:1::/64`): one host, or one customer's network,
 * holds 2^64 addresses and could otherwise take a fresh one for every request. An IPv4-mapped IPv6
 * address (`::ffff:192.0.2.1`, as a dual-stack socket reports an IPv4 client) is the IPv4 address.
 * Anything that is not an address is its own key. On the token path: IPv4 takes no parsing.
 */
export function addressKey(address: string): string {
  if (!address.includes(':')) return address;
  if (address.startsWith(MAPPED_PREFIX) && isIPv4(address.slice(MAPPED_PREFIX.length))) return address.slice(MAPPED_PREFIX.length);
  const groups = ipv6Groups(address);
  if (groups === undefined) return address;
  if (isIPv4Mapped(groups)) return dottedQuad(groups[6]!, groups[7]!);
  const [a = 0, b = 0, c = 0, d = 0] = groups;
  return `${a.toString(16)}:${b.toString(16)}:${c.toString(16)}:${d.toString(16)}::/64`;
}

/**
 * The eight 16-bit groups of an IPv6 address (a zone id, `%eth0`, ignored); undefined for anything
 * else. One pass over the characters (split and parseInt cost several times more).
 */
function ipv6Groups(address: string): number[] | undefined {
  const zone = address.indexOf('%');
  const text = zone === -1 ? address : address.slice(0, zone);
  if (!isIPv6(text)) return undefined;
  // Valid from here: groups of 1 to 4 hex digits between colons, at most one `::`, and perhaps an
  // IPv4 address in the last 32 bits.
  const ipv4At = text.includes('.') ? text.lastIndexOf(':') + 1 : text.length;
  const groups: number[] = [];
  let gapAt = -1;
  let value = 0;
  let digits = 0;
  for (let i = 0; i < ipv4At; i++) {
    const code = text.charCodeAt(i);
    if (code !== COLON) {
      value = value * 16 + hexDigit(code);
      digits++;
    } else if (digits > 0) {
      groups.push(value);
      value = 0;
      digits = 0;
    } else if (i > 0) {
      gapAt = groups.length; // the second colon of `::`
    }
  }
  if (digits > 0) groups.push(value);
  if (ipv4At < text.length) groups.push(...ipv4Groups(text, ipv4At));
  if (gapAt === -1) return groups;
  return [...groups.slice(0, gapAt), ...ZEROS.slice(groups.length), ...groups.slice(gapAt)];
}

function hexDigit(code: number): number {
  const lower = code | 0x20; // lower case; leaves '0'-'9' as they are
  return lower <= 0x39 ? lower - 0x30 : lower - 0x57;
}

/** The IPv4 address that ends `text` from `start` (already checked), as two 16-bit groups. */
function ipv4Groups(text: string, start: number): [number, number] {
  const octets = [0, 0, 0, 0];
  let octet = 0;
  for (let i = start; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code === DOT) octet++;
    else octets[octet] = octets[octet]! * 10 + (code - 0x30);
  }
  const [a = 0, b = 0, c = 0, d = 0] = octets;
  return [(a << 8) | b, (c << 8) | d];
}

/** `::ffff:0:0/96`. */
function isIPv4Mapped(groups: number[]): boolean {
  return groups[0] === 0 && groups[1] === 0 && groups[2] === 0 && groups[3] === 0 && groups[4] === 0 && groups[5] === 0xffff;
}

function dottedQuad(high: number, low: number): string {
  return `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`;
}
