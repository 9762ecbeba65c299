import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fingerprint64, fingerprintHex } from '../../../processors/common/fingerprint.js';

// pinned with Python: hashlib.sha256(s.encode('utf-8')).digest()[:8], read big-endian
const PINNED: [string, string, bigint][] = [
  ['', 'e3b0c44298fc1c14', 16406829232824261652n],
  ['http://example.com/', '2a1b402420ef4657', 3034089297879713367n],
  ['https://xn--mnchen-3ya.de/%C3%A4?q=1', '12508a98d96a64d3', 1319707079906845907n],
  ['h\u00e9llo w\u00f6rld', 'a1003f7d04a41157', 11601342446287720791n],
  ['\u{1F600}', 'f0443a342c5ef547', 17313026863276160327n],
];

test('fingerprints are the first 8 bytes of SHA-256 over UTF-8, pinned across runs and platforms', () => {
  for (const [s, hex, value] of PINNED) {
    assert.equal(fingerprintHex(s), hex, `hex of ${JSON.stringify(s)}`);
    assert.equal(fingerprint64(s), value, `bigint of ${JSON.stringify(s)}`);
  }
});

test('fingerprintHex is fingerprint64 as 16 zero-padded lowercase hex digits', () => {
  for (let i = 0; i < 2000; i++) {
    const s = `http://example.com/page/${i}`;
    const hex = fingerprintHex(s);
    assert.match(hex, /^[0-9a-f]{16}$/);
    assert.equal(hex, fingerprint64(s).toString(16).padStart(16, '0'));
  }
});

test('fingerprint64 is an unsigned 64-bit value', () => {
  for (let i = 0; i < 2000; i++) {
    const f = fingerprint64(`u${i}`);
    assert.ok(f >= 0n && f < 1n << 64n);
  }
});

test('distinct URLs get distinct fingerprints in a sample of 100,000', () => {
  const seen = new Set<bigint>();
  for (let i = 0; i < 100_000; i++) seen.add(fingerprint64(`http://example.com/p?id=${i}`));
  assert.equal(seen.size, 100_000);
});
