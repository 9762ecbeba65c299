import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { CachingDnsResolver, parseResolveRule, type ResolveRule } from '../../../processors/fetcher/dns-resolver.js';
import { CrawlError, InvalidOptionError } from '../../../core/errors.js';

/**
 * A DNS server on 127.0.0.1 that knows a few A records and counts the questions it gets, so the
 * resolver's real query path runs without any packet leaving the machine.
 */
class LoopbackDns {
  readonly questions: string[] = [];
  private readonly socket = dgram.createSocket('udp4');
  constructor(private readonly zone: Record<string, { address: string; ttl: number }>) {}

  get server(): string {
    return `127.0.0.1:${(this.socket.address() as AddressInfo).port}`;
  }

  count(name: string, type: 'A' | 'AAAA'): number {
    return this.questions.filter((q) => q === `${type} ${name}`).length;
  }

  async start(): Promise<void> {
    this.socket.on('message', (query, peer) => this.socket.send(this.answer(query), peer.port, peer.address));
    await new Promise<void>((resolve) => this.socket.bind(0, '127.0.0.1', resolve));
  }

  stop(): Promise<void> {
    return new Promise((resolve) => this.socket.close(() => resolve()));
  }

  private answer(query: Buffer): Buffer {
    const labels: string[] = [];
    let at = 12;
    while (query[at]! > 0) {
      labels.push(query.subarray(at + 1, at + 1 + query[at]!).toString('ascii'));
      at += query[at]! + 1;
    }
    const questionEnd = at + 5;
    const qtype = query.readUInt16BE(at + 1);
    const name = labels.join('.').toLowerCase();
    this.questions.push(`${qtype === 1 ? 'A' : qtype === 28 ? 'AAAA' : qtype} ${name}`);
    const record = this.zone[name];
    const header = Buffer.alloc(12);
    query.copy(header, 0, 0, 2);
    header.writeUInt16BE(record ? 0x8180 : 0x8183, 2); // response, recursion available; NOERROR or NXDOMAIN
    header.writeUInt16BE(1, 4);
    const answers: Buffer[] = [];
    if (record && qtype === 1) {
      const rr = Buffer.alloc(16);
      rr.writeUInt16BE(0xc00c, 0); // pointer to the question name
      rr.writeUInt16BE(1, 2);
      rr.writeUInt16BE(1, 4);
      rr.writeUInt32BE(record.ttl, 6);
      rr.writeUInt16BE(4, 10);
      record.address.split('.').forEach((octet, i) => rr.writeUInt8(Number(octet), 12 + i));
      answers.push(rr);
    }
    header.writeUInt16BE(answers.length, 6);
    return Buffer.concat([header, query.subarray(12, questionEnd), ...answers]);
  }
}

const rules = (...raw: string[]): ResolveRule[] => raw.map(parseResolveRule);

async function dnsFailure(promise: Promise<unknown>): Promise<CrawlError> {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof CrawlError);
    assert.equal(err.code, 'CS_DNS');
    return err;
  }
  assert.fail('expected CS_DNS');
}

describe('parseResolveRule', () => {
  test('parses exact and wildcard patterns, normalised to lower-case ASCII', () => {
    assert.deepEqual(parseResolveRule('site.test=127.0.0.1'), { pattern: 'site.test', address: '127.0.0.1' });
    assert.deepEqual(parseResolveRule('*.test=::1'), { pattern: '*.test', address: '::1' });
    assert.deepEqual(parseResolveRule('v6.test=[::1]'), { pattern: 'v6.test', address: '::1' });
    assert.deepEqual(parseResolveRule('Bücher.Test.=127.0.0.1'), {
      pattern: 'xn--bcher-kva.test',
      address: '127.0.0.1',
    });
  });

  test('rejects malformed rules with a message naming them', () => {
    const cases: Array<[string, RegExp]> = [
      ['site.test', /must be PATTERN=IP .* got 'site.test'/],
      ['=127.0.0.1', /must be PATTERN=IP/],
      ['site.test=', /must be PATTERN=IP/],
      ['site.test=localhost', /'localhost' is not an IPv4 or IPv6 address/],
      ['site.test=127.0.0.256', /is not an IPv4 or IPv6 address/],
      ['a.*.test=127.0.0.1', /pattern must be a host name or '\*\.' followed by a host name, got 'a\.\*\.test'/],
      ['*=127.0.0.1', /pattern must be/],
    ];
    for (const [raw, message] of cases) {
      assert.throws(
        () => parseResolveRule(raw),
        (err: unknown) => {
          assert.ok(err instanceof InvalidOptionError, raw);
          assert.match(err.message, message, raw);
          return true;
        },
      );
    }
  });
});

describe('CachingDnsResolver', () => {
  const dns = new LoopbackDns({
    'cached.test': { address: '127.0.0.11', ttl: 60 },
    'short.test': { address: '127.0.0.12', ttl: 60 },
    'zero.test': { address: '127.0.0.13', ttl: 0 },
  });
  before(() => dns.start());
  after(() => dns.stop());
  const viaLoopbackDns = (extra: object = {}) =>
    new CachingDnsResolver({ servers: [dns.server], queryTimeoutMs: 500, ...extra });

  test('rules answer exact names, and wildcards answer subdomains but not the bare suffix', async () => {
    const resolver = new CachingDnsResolver({
      rules: rules(
        'exact.test=127.0.0.2',
        '*.test=127.0.0.3',
        '*.deep.test=127.0.0.4',
        'multi.test=127.0.0.5',
        'multi.test=::1',
      ),
      systemDns: false,
    });
    assert.deepEqual(await resolver.resolve('exact.test'), ['127.0.0.2']);
    assert.deepEqual(await resolver.resolve('EXACT.test.'), ['127.0.0.2']);
    assert.deepEqual(await resolver.resolve('a.test'), ['127.0.0.3']);
    assert.deepEqual(await resolver.resolve('a.b.test'), ['127.0.0.3']);
    assert.deepEqual(await resolver.resolve('x.deep.test'), ['127.0.0.4'], 'the longer suffix wins');
    assert.deepEqual(await resolver.resolve('deep.test'), ['127.0.0.3']);
    assert.deepEqual(await resolver.resolve('multi.test'), ['127.0.0.5', '::1']);
    await dnsFailure(resolver.resolve('test'));
    await dnsFailure(resolver.resolve('atest'));
  });

  test('IP literals pass through without rules or queries', async () => {
    const resolver = new CachingDnsResolver({ systemDns: false });
    assert.deepEqual(await resolver.resolve('192.0.2.7'), ['192.0.2.7']);
    assert.deepEqual(await resolver.resolve('[2001:db8::1]'), ['2001:db8::1']);
    assert.deepEqual(await resolver.resolve('::1'), ['::1']);
  });

  test('with system DNS off, a name no rule matches fails with CS_DNS and sends no query', async () => {
    const silent = new LoopbackDns({ 'cached.test': { address: '127.0.0.11', ttl: 60 } });
    await silent.start();
    const resolver = new CachingDnsResolver({
      servers: [silent.server],
      systemDns: false,
      rules: rules('*.known.test=127.0.0.1'),
    });
    const err = await dnsFailure(resolver.resolve('cached.test'));
    await silent.stop();
    assert.match(err.message, /no --resolve rule matches 'cached.test' and system DNS is off/);
    assert.deepEqual(silent.questions, []);
  });

  test('a DNS answer is cached: concurrent and repeated lookups send one query per record type', async () => {
    const resolver = viaLoopbackDns();
    const answers = await Promise.all([resolver.resolve('cached.test'), resolver.resolve('cached.test')]);
    assert.deepEqual(answers, [['127.0.0.11'], ['127.0.0.11']]);
    assert.deepEqual(await resolver.resolve('Cached.Test'), ['127.0.0.11']);
    assert.equal(dns.count('cached.test', 'A'), 1);
    assert.equal(dns.count('cached.test', 'AAAA'), 1);
  });

  test('a cached answer expires after maxTtlMs even when its TTL is longer', async () => {
    // the cache runs on a clock the test moves: expiry does not depend on how fast lookups are
    let clock = 1_000_000;
    const resolver = viaLoopbackDns({ maxTtlMs: 100, now: () => clock });
    await resolver.resolve('short.test');
    clock += 99;
    await resolver.resolve('short.test');
    assert.equal(dns.count('short.test', 'A'), 1, 'the answer was not kept for maxTtlMs');
    clock += 1;
    assert.deepEqual(await resolver.resolve('short.test'), ['127.0.0.12']);
    assert.equal(dns.count('short.test', 'A'), 2, 'the answer was kept past maxTtlMs');
  });

  test("the cache's bytes count its answers, failures included, within maxEntries", async () => {
    const resolver = viaLoopbackDns({ maxEntries: 2 });
    assert.equal(resolver.cacheBytes, 0);
    await resolver.resolve('cached.test');
    const one = resolver.cacheBytes;
    assert.ok(one > 0);
    await resolver.resolve('short.test');
    await dnsFailure(resolver.resolve('absent.test'));
    const two = resolver.cacheBytes;
    assert.ok(two > one, 'a second entry counts');
    // a third name (as long as the oldest) evicts the oldest: two entries held, never three
    await dnsFailure(resolver.resolve('noone.test'));
    assert.equal(resolver.cacheBytes, two);
    assert.ok(two < 3 * one, `${two} bytes for two entries of about ${one}`);
  });

  test('an answer with TTL 0 is not cached', async () => {
    const resolver = viaLoopbackDns();
    await resolver.resolve('zero.test');
    await resolver.resolve('zero.test');
    assert.equal(dns.count('zero.test', 'A'), 2);
  });

  test('a failed lookup is CS_DNS and is remembered for negativeTtlMs', async () => {
    let clock = 1_000_000;
    const resolver = viaLoopbackDns({ negativeTtlMs: 150, now: () => clock });
    const err = await dnsFailure(resolver.resolve('missing.test'));
    assert.match(err.message, /cannot resolve 'missing.test'/);
    clock += 149;
    await dnsFailure(resolver.resolve('missing.test'));
    assert.equal(dns.count('missing.test', 'A'), 1, 'the failure was not remembered for negativeTtlMs');
    clock += 1;
    await dnsFailure(resolver.resolve('missing.test'));
    assert.equal(dns.count('missing.test', 'A'), 2, 'the failure was remembered past negativeTtlMs');
  });

  test('options are validated when the resolver is built', () => {
    assert.throws(() => new CachingDnsResolver({ maxTtlMs: -1 }), /maxTtlMs must be a non-negative integer, got -1/);
    assert.throws(() => new CachingDnsResolver({ negativeTtlMs: 1.5 }), /negativeTtlMs must be a non-negative integer/);
    assert.throws(() => new CachingDnsResolver({ servers: ['not a server'] }), InvalidOptionError);
  });
});
