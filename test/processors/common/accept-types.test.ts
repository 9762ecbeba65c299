import { test } from 'node:test';
import assert from 'node:assert/strict';
import { InvalidOptionError } from '../../../core/errors.js';
import { AcceptTypes, DEFAULT_ACCEPT_TYPES, parseAcceptTypes } from '../../../processors/common/accept-types.js';

test('the default types take HTML, XHTML, feeds, sitemaps and plain text, and refuse binaries', () => {
  const a = new AcceptTypes(parseAcceptTypes(DEFAULT_ACCEPT_TYPES));
  for (const type of [
    'text/html; charset=utf-8',
    'TEXT/HTML',
    'application/xhtml+xml',
    'application/rss+xml',
    'application/atom+xml',
    'application/xml',
    'text/plain',
  ])
    assert.equal(a.accepts(type), true, type);
  for (const type of ['image/png', 'application/zip', 'video/mp4', 'application/octet-stream', 'application/pdf'])
    assert.equal(a.accepts(type), false, type);
});

test('a type wildcard takes every subtype of its type only; */* takes everything', () => {
  const text = new AcceptTypes(parseAcceptTypes(['text/*']));
  assert.equal(text.accepts('text/csv'), true);
  assert.equal(text.accepts('application/json'), false);
  assert.equal(new AcceptTypes(parseAcceptTypes(['*/*'])).accepts('image/png'), true);
});

test('a response without a usable Content-Type is accepted: its type is unknown, not refused', () => {
  const a = new AcceptTypes(parseAcceptTypes(['text/html']));
  assert.equal(a.accepts(undefined), true);
  assert.equal(a.accepts('garbage'), true);
});

test('a pattern that is not a media type is refused with the value', () => {
  for (const bad of ['html', 'text/', '*/html', 'text/html; q=1', ''])
    assert.throws(
      () => parseAcceptTypes([bad]),
      (e: unknown) => e instanceof InvalidOptionError && e.message.includes(JSON.stringify(bad)),
      bad,
    );
  assert.throws(() => parseAcceptTypes([]), /at least one/);
});
