import { test } from 'node:test';
import assert from 'node:assert/strict';
import { leaseIdOf, leaseIssuer } from '../../../processors/common/lease-id.js';

test('a lease id names its issuing frontier partition; an id of another form names none', () => {
  assert.equal(leaseIdOf(12, 7, 35), '12-7-z');
  assert.equal(leaseIssuer(leaseIdOf(12, 7, 35)), '7');
  assert.equal(leaseIssuer(leaseIdOf(1, 63, 0)), '63');
  assert.equal(leaseIssuer('test-3'), '');
  assert.equal(leaseIssuer('plain'), '');
});
