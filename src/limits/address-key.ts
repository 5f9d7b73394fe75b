import { isIPv6 } from 'node:net';

/**
 * The key under which per-address limits count a client address. An IPv4 address is its own key.
 * An IPv6 address counts by its /64 (`2001:db8:0:1::/64`): one host, or one customer's network,
 * holds 2^64 addresses and could otherwise take a fresh one for every request. An IPv4-mapped IPv6
 * address (`::ffff:192.0.2.1`, as a dual-stack socket reports an IPv4 client) is the IPv4 address.
 * Anything that is not an address is its own key.
 */
export function addressKey(address: string): string {
  // IPv4, the common case: no parsing.
  if (!address.includes(':')) return address;
  const groups = ipv6Groups(address);
  if (groups === undefined) return address;
  if (isIPv4Mapped(groups)) return dottedQuad(groups[6]!, groups[7]!);
  return `${groups.slice(0, 4).map((group) => group.toString(16)).join(':')}::/64`;
}

/** The eight 16-bit groups of an IPv6 address (a zone id, `%eth0`, ignored); undefined for anything else. */
function ipv6Groups(address: string): number[] | undefined {
  const zone = address.indexOf('%');
  const text = zone === -1 ? address : address.slice(0, zone);
  if (!isIPv6(text)) return undefined;
  const gap = text.indexOf('::');
  if (gap === -1) return hexGroups(text);
  const head = hexGroups(text.slice(0, gap));
  const tail = hexGroups(text.slice(gap + 2));
  return [...head, ...new Array<number>(8 - head.length - tail.length).fill(0), ...tail];
}

/** `1:abcd:192.0.2.1` → [0x1, 0xabcd, 0xc000, 0x0201]: an embedded IPv4 address is two groups. */
function hexGroups(part: string): number[] {
  if (part === '') return [];
  const groups: number[] = [];
  for (const piece of part.split(':')) {
    if (piece.includes('.')) {
      const [a = 0, b = 0, c = 0, d = 0] = piece.split('.').map(Number);
      groups.push((a << 8) | b, (c << 8) | d);
    } else {
      groups.push(parseInt(piece, 16));
    }
  }
  return groups;
}

/** `::ffff:0:0/96`. */
function isIPv4Mapped(groups: number[]): boolean {
  return groups[0] === 0 && groups[1] === 0 && groups[2] === 0 && groups[3] === 0 && groups[4] === 0 && groups[5] === 0xffff;
}

function dottedQuad(high: number, low: number): string {
  return `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`;
}
