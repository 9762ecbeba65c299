import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseFeedDate } from '../../../processors/parser/feeds/index.js';

test('W3C datetimes: year, month, day, minutes, seconds and fractions, with a zone or as UTC', () => {
  assert.equal(parseFeedDate('2005'), Date.UTC(2005, 0, 1));
  assert.equal(parseFeedDate('2005-07'), Date.UTC(2005, 6, 1));
  assert.equal(parseFeedDate('2005-07-16'), Date.UTC(2005, 6, 16));
  assert.equal(parseFeedDate('2005-07-16T19:20+01:00'), Date.UTC(2005, 6, 16, 18, 20));
  assert.equal(parseFeedDate('2005-07-16T19:20:30+01:00'), Date.UTC(2005, 6, 16, 18, 20, 30));
  assert.equal(parseFeedDate('2005-07-16T19:20:30.45+01:00'), Date.UTC(2005, 6, 16, 18, 20, 30, 450));
  assert.equal(parseFeedDate('2005-07-16T19:20:30Z'), Date.UTC(2005, 6, 16, 19, 20, 30));
  assert.equal(parseFeedDate('2005-07-16T19:20:30-0530'), Date.UTC(2005, 6, 17, 0, 50, 30));
  assert.equal(parseFeedDate(' 2005-07-16 19:20:30 '), Date.UTC(2005, 6, 16, 19, 20, 30));
  assert.equal(parseFeedDate('2016-12-31T23:59:60Z'), Date.UTC(2016, 11, 31, 23, 59, 59));
});

test('RFC 822 and RFC 1123 dates of RSS, with named zones, offsets and two-digit years', () => {
  assert.equal(parseFeedDate('Sat, 07 Sep 2002 00:00:01 GMT'), Date.UTC(2002, 8, 7, 0, 0, 1));
  assert.equal(parseFeedDate('Tue, 10 Jun 2003 04:00:00 -0400'), Date.UTC(2003, 5, 10, 8));
  assert.equal(parseFeedDate('10 Jun 2003 04:00 EDT'), Date.UTC(2003, 5, 10, 8));
  assert.equal(parseFeedDate('Mon, 1 Jan 18 09:30:00 PST'), Date.UTC(2018, 0, 1, 17, 30));
  assert.equal(parseFeedDate('Thu, 01 Jan 98 00:00:00 +0000'), Date.UTC(1998, 0, 1));
  assert.equal(parseFeedDate('Wednesday, 02 October 2024 10:00:00 UT'), Date.UTC(2024, 9, 2, 10));
  // a zone name RFC 822 does not define reads as UTC rather than losing the date
  assert.equal(parseFeedDate('Wed, 02 Oct 2024 10:00:00 CEST'), Date.UTC(2024, 9, 2, 10));
});

test('absent, empty and unparseable dates are null, as are fields out of range', () => {
  for (const s of [
    undefined,
    '',
    '   ',
    'yesterday',
    '2005-13-01',
    '2005-02-30',
    '2005-07-16T25:00Z',
    '2005-07-16T19:61Z',
    '2005-07-16T19:20+25:00',
    '16/07/2005',
    'Sat, 07 Foo 2002 00:00:01 GMT',
    '0099-01-01',
    '2005-07-16T19:20:30Z and more',
  ]) {
    assert.equal(parseFeedDate(s), null, String(s));
  }
});
