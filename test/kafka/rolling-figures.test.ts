import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  addBuckets,
  commitQuantile,
  longestGap,
  parseCommitBuckets,
  violationsWithRequests,
  type Buckets,
} from './rolling-figures.js';
import type { RequestLogEntry } from '../../synthetic-web/request-log.js';

const METRICS = (a: number, b: number, inf: number): string =>
  [
    '# TYPE crawlstream_commit_duration_seconds histogram',
    `crawlstream_commit_duration_seconds_bucket{le="0.1"} ${a}`,
    `crawlstream_commit_duration_seconds_bucket{le="0.2"} ${b}`,
    `crawlstream_commit_duration_seconds_bucket{le="+Inf"} ${inf}`,
    `crawlstream_commit_duration_seconds_count ${inf}`,
  ].join('\n');

test('commit buckets of two lives add up, and the quantile is the least bound holding its share', () => {
  const all: Buckets = new Map();
  addBuckets(all, parseCommitBuckets(METRICS(90, 99, 100)));
  addBuckets(all, parseCommitBuckets(METRICS(50, 100, 100)));
  assert.deepEqual(
    [...all],
    [
      [0.1, 140],
      [0.2, 199],
      [Infinity, 200],
    ],
  );
  assert.equal(commitQuantile(all, 0.5), 0.1);
  assert.equal(commitQuantile(all, 0.99), 0.2);
  assert.equal(commitQuantile(all, 0.999), Infinity);
  assert.equal(commitQuantile(new Map(), 0.99), undefined);
});

test('the longest stop counts from the last request before the window to the first after it', () => {
  const starts = [0, 100, 200, 5_000, 5_100, 20_000, 20_100];
  // inside: 200 → 5000 is 4.8 s
  assert.deepEqual(longestGap(starts, 150, 5_050), { ms: 4_800, from: 200 });
  // a stop running past the window's end counts whole
  assert.deepEqual(longestGap(starts, 4_000, 6_000), { ms: 14_900, from: 5_100 });
  // a stop begun before the window counts whole too
  assert.deepEqual(longestGap(starts, 1_000, 4_000), { ms: 4_800, from: 200 });
});

test('a violation comes with its own request and every request its detail cites, in order', () => {
  const entry = (seq: number, host: string, start: number): RequestLogEntry =>
    ({ seq, host, method: 'GET', path: '/', start, end: start + 5, status: 200, bytes: 10 }) as RequestLogEntry;
  const log = [entry(1, 'a.test', 0), entry(2, 'b.test', 50), entry(3, 'a.test', 60)];
  const report = {
    requests: 3,
    hosts: 2,
    perHost: {},
    violations: [{ kind: 'ip-gap' as const, host: 'b.test', seq: 2, detail: 'started 45.0 ms after #1 on 127.0.1.1' }],
  };
  const [v] = violationsWithRequests(report, log);
  assert.deepEqual(
    v!.requests.map((r) => r.seq),
    [1, 2],
  );
  assert.equal(v!.violation.host, 'b.test');
});
