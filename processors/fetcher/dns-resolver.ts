import { promises as dns } from 'node:dns';
import { isIP } from 'node:net';
import { domainToASCII } from 'node:url';
import { CrawlError, InvalidOptionError } from '../../core/errors.js';

/**
 * A `--resolve`-style override: names matching `pattern` resolve to `address` without asking
 * any DNS server. `pattern` is an exact name (`host.test`) or `*.` plus a suffix (`*.test`),
 * which matches every subdomain of the suffix but not the bare suffix itself.
 * Patterns are stored lower-case, ASCII (IDN converted) and without a trailing dot.
 */
export interface ResolveRule {
  pattern: string;
  address: string;
}

/**
 * Parses `PATTERN=IP` (e.g. `site.test=127.0.0.1`, `*.test=::1`).
 * Throws InvalidOptionError naming the raw value and what is wrong with it.
 */
export function parseResolveRule(raw: string): ResolveRule {
  const eq = raw.indexOf('=');
  if (eq <= 0 || eq === raw.length - 1) {
    throw new InvalidOptionError(
      `--resolve must be PATTERN=IP (e.g. 'site.test=127.0.0.1' or '*.test=::1'), got '${raw}'`,
    );
  }
  const rawPattern = raw.slice(0, eq).trim();
  let address = raw.slice(eq + 1).trim();
  if (address.startsWith('[') && address.endsWith(']')) address = address.slice(1, -1);
  if (isIP(address) === 0) {
    throw new InvalidOptionError(`--resolve '${raw}': '${address}' is not an IPv4 or IPv6 address`);
  }
  const wildcard = rawPattern.startsWith('*.');
  const name = normalizeName(wildcard ? rawPattern.slice(2) : rawPattern);
  if (name === '' || name.includes('*')) {
    throw new InvalidOptionError(
      `--resolve '${raw}': pattern must be a host name or '*.' followed by a host name, got '${rawPattern}'`,
    );
  }
  return { pattern: wildcard ? `*.${name}` : name, address };
}

/** Answers of the system resolver for one name, before caching. */
interface SystemAnswer {
  addresses: string[];
  /** How long the answer may be cached; capped by `maxTtlMs`. */
  ttlMs: number;
}

export interface DnsResolverOptions {
  /** Overrides consulted before any DNS server; the most specific pattern wins (exact, then longest suffix). */
  rules?: ResolveRule[];
  /** Default true. False: a name matched by no rule fails with CS_DNS and no query is sent. */
  systemDns?: boolean;
  /** Upper bound on how long a positive answer is cached, whatever its TTL. Default 300000. */
  maxTtlMs?: number;
  /** How long a failed lookup is remembered. Default 60000. */
  negativeTtlMs?: number;
  /** Most names kept in the cache; the oldest entry goes first. Default 100000. */
  maxEntries?: number;
  /**
   * DNS servers ('1.2.3.4', '1.2.3.4:5353', '[::1]:53') to query instead of the system's.
   * When set, there is no fallback to the OS resolver (getaddrinfo).
   */
  servers?: string[];
  /** Per-query timeout of the DNS client. Default 2000. */
  queryTimeoutMs?: number;
  /** The clock cache entries expire by, in epoch ms. Default `Date.now`; tests pass one they move. */
  now?: () => number;
}

interface CacheEntry {
  expiresAt: number;
  addresses?: string[];
  error?: CrawlError;
}

/**
 * Resolves host names to addresses, IPv4 first, for the fetcher.
 * IP literals pass through untouched; rule matches are answered without a query; other names go
 * to DNS (`resolve4`/`resolve6` with TTLs, falling back to the OS resolver when no explicit
 * servers are set). Answers are cached for min(TTL, maxTtlMs), failures for negativeTtlMs, and
 * concurrent lookups of one name share one query.
 */
export class CachingDnsResolver {
  private readonly exact = new Map<string, string[]>();
  private readonly wildcards: Array<{ suffix: string; addresses: string[] }> = [];
  private readonly now: () => number;
  private readonly systemDns: boolean;
  private readonly maxTtlMs: number;
  private readonly negativeTtlMs: number;
  private readonly maxEntries: number;
  private readonly resolver: dns.Resolver;
  private readonly fallbackToOs: boolean;
  private readonly cache = new Map<string, CacheEntry>();
  private readonly inFlight = new Map<string, Promise<string[]>>();
  private held = 0;

  constructor(o: DnsResolverOptions) {
    this.now = o.now ?? Date.now;
    this.systemDns = o.systemDns ?? true;
    this.maxTtlMs = nonNegativeInteger('maxTtlMs', o.maxTtlMs ?? 300_000);
    this.negativeTtlMs = nonNegativeInteger('negativeTtlMs', o.negativeTtlMs ?? 60_000);
    this.maxEntries = nonNegativeInteger('maxEntries', o.maxEntries ?? 100_000);
    const queryTimeoutMs = nonNegativeInteger('queryTimeoutMs', o.queryTimeoutMs ?? 2_000);
    this.resolver = new dns.Resolver({ timeout: queryTimeoutMs, tries: 2 });
    if (o.servers !== undefined) {
      try {
        this.resolver.setServers(o.servers);
      } catch (err) {
        throw new InvalidOptionError(
          `DNS servers must be IP[:port] addresses, got ${JSON.stringify(o.servers)}: ${(err as Error).message}`,
        );
      }
    }
    this.fallbackToOs = o.servers === undefined;
    for (const rule of o.rules ?? []) {
      if (rule.pattern.startsWith('*.')) {
        const suffix = rule.pattern.slice(1); // keeps the dot: '.test'
        const existing = this.wildcards.find((w) => w.suffix === suffix);
        if (existing) existing.addresses.push(rule.address);
        else this.wildcards.push({ suffix, addresses: [rule.address] });
      } else {
        const list = this.exact.get(rule.pattern) ?? [];
        list.push(rule.address);
        this.exact.set(rule.pattern, list);
      }
    }
    // longest suffix first, so the most specific wildcard wins
    this.wildcards.sort((a, b) => b.suffix.length - a.suffix.length);
  }

  /**
   * Addresses for `host` (a name or an IP literal, IPv6 with or without brackets), IPv4 first.
   * Never empty. Throws CrawlError('CS_DNS') when the name has no address or lookups are off.
   */
  async resolve(host: string): Promise<string[]> {
    const literal = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
    if (isIP(literal) !== 0) return [literal];
    const name = normalizeName(host);
    if (name === '') throw new CrawlError('CS_DNS', `'${host}' is not a valid host name`);
    const ruled = this.matchRule(name);
    if (ruled) return [...ruled];
    if (!this.systemDns) {
      throw new CrawlError('CS_DNS', `no --resolve rule matches '${name}' and system DNS is off`);
    }
    const now = this.now();
    const cached = this.cache.get(name);
    if (cached && cached.expiresAt > now) {
      if (cached.error) throw cached.error;
      return [...cached.addresses!];
    }
    let pending = this.inFlight.get(name);
    if (!pending) {
      pending = this.lookupAndCache(name).finally(() => this.inFlight.delete(name));
      this.inFlight.set(name, pending);
    }
    return [...(await pending)];
  }

  private matchRule(name: string): string[] | undefined {
    const exact = this.exact.get(name);
    if (exact) return exact;
    return this.wildcards.find((w) => name.endsWith(w.suffix))?.addresses;
  }

  private async lookupAndCache(name: string): Promise<string[]> {
    try {
      const answer = await this.querySystem(name);
      this.remember(name, {
        expiresAt: this.now() + Math.min(answer.ttlMs, this.maxTtlMs),
        addresses: answer.addresses,
      });
      return answer.addresses;
    } catch (err) {
      const error = new CrawlError('CS_DNS', `cannot resolve '${name}': ${(err as Error).message}`, { cause: err });
      this.remember(name, { expiresAt: this.now() + this.negativeTtlMs, error });
      throw error;
    }
  }

  private async querySystem(name: string): Promise<SystemAnswer> {
    const [v4, v6] = await Promise.allSettled([
      this.resolver.resolve4(name, { ttl: true }),
      this.resolver.resolve6(name, { ttl: true }),
    ]);
    const records = [...(v4.status === 'fulfilled' ? v4.value : []), ...(v6.status === 'fulfilled' ? v6.value : [])];
    if (records.length > 0) {
      const ttlSeconds = Math.min(...records.map((r) => r.ttl));
      return { addresses: records.map((r) => r.address), ttlMs: ttlSeconds * 1000 };
    }
    if (this.fallbackToOs) {
      // the OS resolver knows /etc/hosts and local naming that a plain DNS query does not
      const found = await dns.lookup(name, { all: true });
      found.sort((a, b) => a.family - b.family);
      if (found.length > 0) return { addresses: found.map((a) => a.address), ttlMs: this.maxTtlMs };
    }
    const reason = v4.status === 'rejected' ? (v4.reason as Error) : new Error('no A or AAAA records');
    throw reason;
  }

  /** About what the cached answers hold, in bytes (at most maxEntries of them). */
  get cacheBytes(): number {
    return this.held;
  }

  private remember(name: string, entry: CacheEntry): void {
    if (this.maxEntries === 0 || entry.expiresAt <= this.now()) return;
    this.forget(name);
    while (this.cache.size >= this.maxEntries) this.forget(this.cache.keys().next().value!);
    this.cache.set(name, entry);
    this.held += entryBytes(name, entry);
  }

  private forget(name: string): void {
    const old = this.cache.get(name);
    if (old === undefined) return;
    this.cache.delete(name);
    this.held -= entryBytes(name, old);
  }
}

/** About what one cached answer holds: its name (UTF-16), the entry, and each address string. */
function entryBytes(name: string, entry: CacheEntry): number {
  return 96 + 2 * name.length + 48 * (entry.addresses?.length ?? 1);
}

function normalizeName(raw: string): string {
  const trimmed = raw.trim().replace(/\.$/, '');
  if (trimmed === '') return '';
  return domainToASCII(trimmed).toLowerCase();
}

function nonNegativeInteger(name: string, value: number): number {
  if (!Number.isInteger(value) || value < 0) {
    throw new InvalidOptionError(`${name} must be a non-negative integer, got ${value}`);
  }
  return value;
}
