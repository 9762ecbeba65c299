import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { AddressGuard, parseCidr } from '../../../processors/fetcher/address-guard.js';
import { InvalidOptionError } from '../../../core/errors.js';

// Addresses here are only classified by a pure function; nothing is ever connected to.
const guard = new AddressGuard([]);

const REFUSED: Array<[string, RegExp]> = [
  ['0.0.0.0', /unspecified/],
  ['0.1.2.3', /unspecified/],
  ['10.0.0.1', /private/],
  ['10.255.255.255', /private/],
  ['100.64.0.1', /carrier-grade NAT/],
  ['100.127.255.255', /carrier-grade NAT/],
  ['127.0.0.1', /loopback/],
  ['127.255.255.254', /loopback/],
  ['169.254.169.254', /link-local/],
  ['172.16.0.1', /private/],
  ['172.31.255.255', /private/],
  ['192.0.0.8', /IETF/],
  ['192.0.2.1', /documentation/],
  ['192.168.1.1', /private/],
  ['198.18.0.1', /benchmarking/],
  ['224.0.0.1', /multicast/],
  ['239.255.255.250', /multicast/],
  ['240.0.0.1', /reserved/],
  ['255.255.255.255', /reserved/],
  ['::', /unspecified/],
  ['::1', /loopback/],
  ['[::1]', /loopback/],
  ['fc00::1', /unique local/],
  ['fd12:3456:789a::1', /unique local/],
  ['fe80::1', /link-local/],
  ['fe80::1%eth0', /link-local/],
  ['febf:ffff::1', /link-local/],
  ['fec0::1', /site-local/],
  ['ff02::1', /multicast/],
  ['::127.0.0.1', /reserved/],
  ['100::1', /reserved/],
  ['::ffff:127.0.0.1', /IPv4-mapped of 127\.0\.0\.1 is loopback/],
  ['::ffff:7f00:1', /IPv4-mapped of 127\.0\.0\.1 is loopback/],
  ['::ffff:10.1.2.3', /IPv4-mapped of 10\.1\.2\.3 is private/],
  ['::ffff:169.254.169.254', /link-local/],
  ['64:ff9b::7f00:1', /NAT64 of 127\.0\.0\.1 is loopback/],
  ['64:ff9b::192.168.0.1', /NAT64 of 192\.168\.0\.1 is private/],
  ['2002:7f00:1::1', /6to4 of 127\.0\.0\.1 is loopback/],
  ['2002:c0a8:0101::', /6to4 of 192\.168\.1\.1 is private/],
  ['2001::1', /IETF protocol assignments/],
  ['2001:db8::1', /documentation/],
  ['3fff::1', /documentation/],
];

// Public-looking literals, including the first and last address outside each refused block.
const ALLOWED = [
  '1.1.1.1',
  '8.8.8.8',
  '93.184.216.34',
  '9.255.255.255',
  '11.0.0.0',
  '100.63.255.255',
  '100.128.0.0',
  '126.255.255.255',
  '128.0.0.0',
  '169.253.255.255',
  '172.15.255.255',
  '172.32.0.0',
  '192.167.255.255',
  '192.169.0.0',
  '223.255.255.255',
  '2606:4700:4700::1111',
  '2a00:1450:4001::1',
  '2001:200::1',
  '::ffff:93.184.216.34',
  '64:ff9b::808:808',
  '2002:5db8:d822::1',
];

describe('AddressGuard', () => {
  for (const [ip, reason] of REFUSED) {
    test(`refuses ${ip} by default, saying why`, () => {
      const verdict = guard.check(ip);
      assert.equal(verdict.ok, false);
      assert.match(verdict.ok ? '' : verdict.reason, reason);
    });
  }

  test('allows public unicast addresses, including the neighbours of every refused block', () => {
    for (const ip of ALLOWED) assert.deepEqual(guard.check(ip), { ok: true }, ip);
  });

  test('refuses what is not an IP address', () => {
    for (const raw of ['localhost', '', '1.2.3', '2130706433', '::ffff::1']) {
      assert.equal(guard.check(raw).ok, false, raw);
    }
  });

  test('an allow-list CIDR overrides the refusal for exactly its addresses', () => {
    const loopbackOne = new AddressGuard([parseCidr('127.0.0.1/32')]);
    assert.deepEqual(loopbackOne.check('127.0.0.1'), { ok: true });
    assert.deepEqual(loopbackOne.check('::ffff:127.0.0.1'), { ok: true });
    assert.equal(loopbackOne.check('127.0.0.2').ok, false);
    assert.equal(loopbackOne.check('::1').ok, false);

    const lan = new AddressGuard([parseCidr('10.0.0.0/8'), parseCidr('::1/128')]);
    assert.deepEqual(lan.check('10.200.0.1'), { ok: true });
    assert.deepEqual(lan.check('::1'), { ok: true });
    assert.equal(lan.check('11.0.0.0').ok, true);
    assert.equal(lan.check('192.168.0.1').ok, false);
  });
});

describe('parseCidr', () => {
  test('parses IPv4 and IPv6 blocks and bare addresses as single hosts', () => {
    assert.deepEqual(parseCidr('127.0.0.1/32'), { family: 4, network: 0x7f000001n, prefix: 32, text: '127.0.0.1/32' });
    assert.deepEqual(parseCidr('10.0.0.0/8'), { family: 4, network: 0x0a000000n, prefix: 8, text: '10.0.0.0/8' });
    assert.deepEqual(parseCidr('0.0.0.0/0'), { family: 4, network: 0n, prefix: 0, text: '0.0.0.0/0' });
    assert.deepEqual(parseCidr('::1/128'), { family: 6, network: 1n, prefix: 128, text: '::1/128' });
    assert.equal(parseCidr('::1').prefix, 128);
    assert.equal(parseCidr('192.168.1.1').prefix, 32);
    assert.equal(parseCidr('fe80::/10').network, 0xfe80n << 112n);
  });

  test('rejects malformed values with a message naming them', () => {
    const cases: Array<[string, RegExp]> = [
      ['127.0.0.1/33', /prefix must be an integer from 0 to 32, got '33'/],
      ['::1/129', /from 0 to 128/],
      ['10.0.0.0/', /got ''/],
      ['10.0.0.0/-1', /got '-1'/],
      ['10.0.0.0/8.5', /got '8.5'/],
      ['1.2.3/8', /'1.2.3' is not an IPv4 or IPv6 address/],
      ['localhost/8', /not an IPv4 or IPv6 address/],
      ['127.0.0.1/8', /host bits set; did you mean '127.0.0.0\/8'/],
      ['fe80::1/10', /host bits set/],
    ];
    for (const [raw, message] of cases) {
      assert.throws(
        () => parseCidr(raw),
        (err: unknown) => {
          assert.ok(err instanceof InvalidOptionError, raw);
          assert.equal(err.code, 'CS_INVALID_OPTION');
          assert.match(err.message, message, raw);
          return true;
        },
      );
    }
  });
});
