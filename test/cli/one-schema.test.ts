import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseControlArgs } from '../../cli/control.js';
import { parseCrawlArgs } from '../../cli/options.js';
import { parseReplayArgs } from '../../cli/replay.js';
import { isCrawlError } from '../../core/errors.js';
import { validateCrawlConfig } from '../../processors/common/crawl-config.js';

const refused = (f: () => unknown, message: RegExp): void =>
  assert.throws(f, (err: unknown) => {
    assert.ok(isCrawlError(err), `expected a CrawlError, got ${String(err)}`);
    assert.equal(err.code, 'CS_INVALID_OPTION');
    assert.match(err.message.split('\n')[0]!, message);
    return true;
  });

test('--max-segment-repeats, --robots-ttl and --recrawl-shorten: one bound each, below it refused by both', () => {
  for (const [flag, value, field, fieldValue] of [
    ['--max-segment-repeats', '1', 'maxSegmentRepeats', 1],
    ['--robots-ttl', '999', 'robotsTtlMs', 999],
    ['--recrawl-shorten', '0.005', 'recrawlShorten', 0.005],
  ] as const) {
    refused(() => parseCrawlArgs(['--data', 'd', flag, value], {}), new RegExp(`^${flag} must be `));
    refused(() => validateCrawlConfig({ [field]: fieldValue }), new RegExp(`^${field} must be `));
  }
  // the least value is taken by both
  assert.equal(parseCrawlArgs(['--data', 'd', '--max-segment-repeats', '2'], {}).config.maxSegmentRepeats, 2);
  assert.equal(validateCrawlConfig({ maxSegmentRepeats: 2 }).maxSegmentRepeats, 2);
  assert.equal(validateCrawlConfig({ recrawlShorten: 0.01 }).recrawlShorten, 0.01);
  assert.equal(parseCrawlArgs(['--data', 'd', '--recrawl-shorten', '0.01'], {}).config.recrawlShorten, 0.01);
});

test('control: --data and --brokers from sources of one rank are refused; otherwise the stronger source wins', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cs-one-schema-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const kafka = ['--brokers', '127.0.0.1:1', '--registry', 'http://127.0.0.1:1'];
  refused(
    () => parseControlArgs(['pause', 'example.com', '--data', dir, ...kafka], 0, {}),
    /--data DIR \(embedded crawl\) or --brokers \(Kafka\), not both/,
  );
  refused(
    () =>
      parseControlArgs(['pause', 'example.com'], 0, {
        CRAWLSTREAM_DATA: dir,
        CRAWLSTREAM_BROKERS: '127.0.0.1:1',
        CRAWLSTREAM_REGISTRY: 'http://127.0.0.1:1',
      }),
    /not both/,
  );
  // a pod's CRAWLSTREAM_DATA does not stand in the way of a --brokers flag, nor CRAWLSTREAM_BROKERS of --data
  const onKafka = parseControlArgs(['pause', 'example.com', ...kafka], 0, { CRAWLSTREAM_DATA: dir });
  assert.ok('brokers' in onKafka.target && onKafka.target.brokers[0] === '127.0.0.1:1');
  const embedded = parseControlArgs(['pause', 'example.com', '--data', dir], 0, {
    CRAWLSTREAM_BROKERS: '127.0.0.1:1',
    CRAWLSTREAM_KAFKA_TLS: 'true',
  });
  assert.deepEqual(embedded.target, { dataDir: dir });
  // the Kafka flags themselves with --data are still a mistake
  refused(
    () => parseControlArgs(['pause', 'example.com', '--data', dir, '--kafka-tls'], 0, {}),
    /--kafka-tls is for --brokers/,
  );
});

test('replay: a --brokers flag means Kafka; one from the environment only where DIR holds no embedded crawl', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cs-one-schema-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const embedded = join(dir, 'embedded');
  const instance = join(dir, 'instance');
  mkdirSync(join(embedded, 'log'), { recursive: true });
  mkdirSync(instance);
  const env = { CRAWLSTREAM_BROKERS: '127.0.0.1:1' };
  const verify = (data: string, flags: string[] = []) =>
    parseReplayArgs('verify', ['--store', 'all', '--data', data, ...flags], env).kafka?.brokers;
  assert.equal(verify(embedded), undefined, "an embedded crawl's dir replays on the embedded engine");
  assert.deepEqual(verify(instance), ['127.0.0.1:1'], "a run instance's dir replays from Kafka");
  assert.deepEqual(verify(embedded, ['--brokers', '127.0.0.2:2']), ['127.0.0.2:2'], 'a flag is always taken');
});
