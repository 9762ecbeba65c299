import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isFinalOutcome, isTransient } from '../../../processors/common/outcome.js';

test('a page answer (2xx, 3xx, 4xx other than 429, 5xx other than 503) is final at the first attempt', () => {
  for (const status of [200, 301, 304, 404, 410, 500, 502])
    assert.equal(isFinalOutcome(status, null, 1, 5), true, String(status));
});

test('429 and 503 are retried until the last attempt, which is final', () => {
  for (const status of [429, 503]) {
    assert.equal(isTransient(status, null), true);
    for (let attempt = 1; attempt < 5; attempt++)
      assert.equal(isFinalOutcome(status, null, attempt, 5), false, `${status} attempt ${attempt}`);
    assert.equal(isFinalOutcome(status, null, 5, 5), true);
    assert.equal(isFinalOutcome(status, null, 6, 5), true);
  }
});

test('connection-level errors are transient; errors about the page are final', () => {
  for (const code of ['CS_LEASE_EXPIRED', 'CS_CONNECT', 'CS_RESET', 'CS_TIMEOUT', 'CS_DNS']) {
    assert.equal(isFinalOutcome(0, code, 1, 5), false, code);
    assert.equal(isFinalOutcome(0, code, 5, 5), true, code);
  }
  for (const code of [
    'CS_TLS',
    'CS_TOO_LARGE',
    'CS_BOMB',
    'CS_REFUSED_ADDRESS',
    'CS_BAD_URL',
    'CS_ROBOTS_DISALLOWED',
  ]) {
    assert.equal(isFinalOutcome(0, code, 1, 5), true, code);
  }
});

test('an error code decides over the status it came with', () => {
  assert.equal(isFinalOutcome(503, 'CS_TOO_LARGE', 1, 5), true);
  assert.equal(isFinalOutcome(200, 'CS_TIMEOUT', 1, 5), false);
});
