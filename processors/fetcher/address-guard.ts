import { isIP, isIPv4 } from 'node:net';
import { InvalidOptionError } from '../../core/errors.js';

/** An address block: `network` holds the address as an integer with host bits zero. */
export interface Cidr {
  family: 4 | 6;
  network: bigint;
  prefix: number;
  /** Canonical text, e.g. '127.0.0.0/8'. */
  text: string;
}

export type GuardVerdict = { ok: true } | { ok: false; reason: string };

/**
 * Parses 'a.b.c.d/len' or 'v6/len'; a bare address is a single host (/32 or /128).
 * Throws InvalidOptionError for a malformed value or one with host bits set.
 */
export function parseCidr(raw: string): Cidr {
  const slash = raw.indexOf('/');
  const addressText = slash === -1 ? raw : raw.slice(0, slash);
  const family = isIP(addressText);
  if (family !== 4 && family !== 6) {
    throw new InvalidOptionError(`CIDR '${raw}': '${addressText}' is not an IPv4 or IPv6 address`);
  }
  const width = family === 4 ? 32 : 128;
  const prefixText = slash === -1 ? String(width) : raw.slice(slash + 1);
  const prefix = Number(prefixText);
  if (!/^\d{1,3}$/.test(prefixText) || prefix > width) {
    throw new InvalidOptionError(`CIDR '${raw}': prefix must be an integer from 0 to ${width}, got '${prefixText}'`);
  }
  const value = family === 4 ? ipv4ToBigInt(addressText) : ipv6ToBigInt(addressText);
  const network = value & mask(prefix, width);
  if (network !== value) {
    const suggestion = `${family === 4 ? bigIntToIpv4(network) : addressText}/${prefix}`;
    throw new InvalidOptionError(
      `CIDR '${raw}' has host bits set${family === 4 ? `; did you mean '${suggestion}'?` : ''}`,
    );
  }
  return { family, network, prefix, text: `${addressText}/${prefix}` };
}

/** True when `ip` (already a valid address of the CIDR's family, as an integer) lies in the block. */
function contains(cidr: Cidr, family: 4 | 6, value: bigint): boolean {
  if (cidr.family !== family) return false;
  return (value & mask(cidr.prefix, family === 4 ? 32 : 128)) === cidr.network;
}

interface Block {
  cidr: Cidr;
  reason: string;
}

const block = (text: string, reason: string): Block => ({ cidr: parseCidr(text), reason });

/** IPv4 ranges that are never a public web server (IANA special-purpose registry). */
const REFUSED_V4: Block[] = [
  block('0.0.0.0/8', 'unspecified / "this network"'),
  block('10.0.0.0/8', 'private (RFC 1918)'),
  block('100.64.0.0/10', 'carrier-grade NAT (RFC 6598)'),
  block('127.0.0.0/8', 'loopback'),
  block('169.254.0.0/16', 'link-local'),
  block('172.16.0.0/12', 'private (RFC 1918)'),
  block('192.0.0.0/24', 'IETF protocol assignments'),
  block('192.0.2.0/24', 'documentation (TEST-NET-1)'),
  block('192.88.99.0/24', '6to4 relay anycast'),
  block('192.168.0.0/16', 'private (RFC 1918)'),
  block('198.18.0.0/15', 'benchmarking'),
  block('198.51.100.0/24', 'documentation (TEST-NET-2)'),
  block('203.0.113.0/24', 'documentation (TEST-NET-3)'),
  block('224.0.0.0/4', 'multicast'),
  block('240.0.0.0/4', 'reserved (incl. broadcast)'),
];

/** IPv6 ranges refused even though they lie in global unicast 2000::/3. */
const REFUSED_V6_GLOBAL: Block[] = [
  block('2001::/23', 'IETF protocol assignments (incl. Teredo)'),
  block('2001:db8::/32', 'documentation'),
  block('3fff::/20', 'documentation'),
];

const GLOBAL_UNICAST_V6 = parseCidr('2000::/3');
const MAPPED_V4 = parseCidr('::ffff:0:0/96');
const NAT64 = parseCidr('64:ff9b::/96');
const SIX_TO_FOUR = parseCidr('2002::/16');

/** Names the well-known IPv6 blocks outside 2000::/3, for messages. */
const NON_GLOBAL_V6: Block[] = [
  block('::/128', 'unspecified'),
  block('::1/128', 'loopback'),
  block('fc00::/7', 'unique local (ULA)'),
  block('fe80::/10', 'link-local'),
  block('fec0::/10', 'site-local (deprecated)'),
  block('ff00::/8', 'multicast'),
];

/**
 * Decides whether the fetcher may connect to an address (the SSRF guard).
 * Refuses everything that is not public unicast: loopback, private, link-local, CGNAT,
 * multicast, reserved, documentation, and IPv6 outside 2000::/3 (ULA, link-local, ::1, ::).
 * Addresses that embed an IPv4 address — IPv4-mapped ::ffff:a.b.c.d, NAT64 64:ff9b::/96 and
 * 6to4 2002::/16 — are judged by the embedded IPv4 address. A CIDR in the allow list overrides
 * every refusal (for tests and private deployments). Pure: never touches the network.
 */
export class AddressGuard {
  constructor(private readonly allow: Cidr[]) {}

  check(ip: string): GuardVerdict {
    const bare = ip.startsWith('[') && ip.endsWith(']') ? ip.slice(1, -1) : ip;
    // a zone id names an interface, not a different address
    const address = bare.includes('%') ? bare.slice(0, bare.indexOf('%')) : bare;
    const family = isIP(address);
    if (family === 4) return this.judgeV4(ipv4ToBigInt(address), address);
    if (family === 6) return this.judgeV6(ipv6ToBigInt(address), ip);
    return { ok: false, reason: `'${ip}' is not an IP address` };
  }

  private allowed(family: 4 | 6, value: bigint): boolean {
    return this.allow.some((c) => contains(c, family, value));
  }

  private judgeV4(value: bigint, shown: string): GuardVerdict {
    if (this.allowed(4, value)) return { ok: true };
    const hit = REFUSED_V4.find((b) => contains(b.cidr, 4, value));
    return hit ? { ok: false, reason: `${shown} is ${hit.reason} (${hit.cidr.text})` } : { ok: true };
  }

  private judgeV6(value: bigint, shown: string): GuardVerdict {
    if (this.allowed(6, value)) return { ok: true };
    const embedded = embeddedV4(value);
    if (embedded) {
      const verdict = this.judgeV4(embedded.v4, bigIntToIpv4(embedded.v4));
      return verdict.ok ? verdict : { ok: false, reason: `${shown} is ${embedded.kind} of ${verdict.reason}` };
    }
    if (!contains(GLOBAL_UNICAST_V6, 6, value)) {
      const named = NON_GLOBAL_V6.find((b) => contains(b.cidr, 6, value));
      return {
        ok: false,
        reason: named
          ? `${shown} is ${named.reason} (${named.cidr.text})`
          : `${shown} is outside global unicast 2000::/3 (reserved)`,
      };
    }
    const hit = REFUSED_V6_GLOBAL.find((b) => contains(b.cidr, 6, value));
    return hit ? { ok: false, reason: `${shown} is ${hit.reason} (${hit.cidr.text})` } : { ok: true };
  }
}

function embeddedV4(value: bigint): { v4: bigint; kind: string } | undefined {
  if (contains(MAPPED_V4, 6, value)) return { v4: value & 0xffffffffn, kind: 'IPv4-mapped' };
  if (contains(NAT64, 6, value)) return { v4: value & 0xffffffffn, kind: 'NAT64' };
  if (contains(SIX_TO_FOUR, 6, value)) return { v4: (value >> 80n) & 0xffffffffn, kind: '6to4' };
  return undefined;
}

function mask(prefix: number, width: number): bigint {
  const all = (1n << BigInt(width)) - 1n;
  return prefix === 0 ? 0n : (all >> BigInt(width - prefix)) << BigInt(width - prefix);
}

function ipv4ToBigInt(text: string): bigint {
  return text.split('.').reduce((acc, part) => (acc << 8n) | BigInt(Number(part)), 0n);
}

function bigIntToIpv4(value: bigint): string {
  return [24n, 16n, 8n, 0n].map((shift) => String((value >> shift) & 0xffn)).join('.');
}

/** Expects a valid IPv6 literal (checked with isIP), possibly with '::' and a dotted IPv4 tail. */
function ipv6ToBigInt(text: string): bigint {
  let groupsText = text;
  const tail: string[] = [];
  const lastColon = text.lastIndexOf(':');
  const last = text.slice(lastColon + 1);
  if (isIPv4(last)) {
    const v4 = ipv4ToBigInt(last);
    tail.push(((v4 >> 16n) & 0xffffn).toString(16), (v4 & 0xffffn).toString(16));
    groupsText = text.slice(0, lastColon + 1) + '0'; // placeholder group, replaced below
  }
  const [head, rest] = groupsText.split('::') as [string, string | undefined];
  const headGroups = head === '' ? [] : head.split(':');
  const restGroups = rest === undefined || rest === '' ? [] : rest.split(':');
  if (tail.length > 0) {
    (restGroups.length > 0 ? restGroups : headGroups).pop();
  }
  const explicit = [...headGroups, ...restGroups, ...tail];
  const groups =
    rest === undefined
      ? explicit
      : [...headGroups, ...Array<string>(8 - explicit.length).fill('0'), ...restGroups, ...tail];
  return groups.reduce((acc, g) => (acc << 16n) | BigInt(parseInt(g, 16)), 0n);
}
