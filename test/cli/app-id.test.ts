import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseControlArgs } from '../../cli/control.js';
import { runInject } from '../../cli/inject.js';
import { parseReplayArgs } from '../../cli/replay.js';
import { runReparse } from '../../cli/replay-reparse.js';
import { parseRunArgs } from '../../cli/run-options.js';
import { runTopics } from '../../cli/topics.js';
import { isCrawlError } from '../../core/errors.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cs-app-id-'));
const KAFKA = ['--brokers', '127.0.0.1:1', '--registry', 'http://127.0.0.1:1'];
const RUN = ['--role', 'all', ...KAFKA, '--data', dir];
const FORM = 'lower-case letters, digits and dashes, starting with a letter';
/** No CRAWLSTREAM_* of the test run's own (npm test exports CRAWLSTREAM_BROKERS and _REGISTRY for the Kafka tests). */
const ENV = {};

function isRefusal(message: string) {
  return (err: unknown): boolean => {
    assert.ok(isCrawlError(err), `expected a CrawlError, got ${String(err)}`);
    assert.equal(err.code, 'CS_INVALID_OPTION');
    assert.equal(err.message.split('\n')[0], message);
    return true;
  };
}

test('run takes --app-id (default crawlstream), also from CRAWLSTREAM_APP_ID, and refuses a malformed one naming its source', () => {
  assert.equal(parseRunArgs(RUN, {}).applicationId, 'crawlstream');
  assert.equal(parseRunArgs([...RUN, '--app-id', 'news-2'], {}).applicationId, 'news-2');
  assert.equal(parseRunArgs(RUN, { CRAWLSTREAM_APP_ID: 'news' }).applicationId, 'news');
  assert.throws(
    () => parseRunArgs([...RUN, '--app-id', 'News'], {}),
    isRefusal(`--app-id must be ${FORM}, got "News" (from flag --app-id)`),
  );
  assert.throws(() => parseRunArgs(RUN, { CRAWLSTREAM_APP_ID: '9x' }), /--app-id must be .* got "9x"/);
});

test('topics, inject and control refuse a malformed --app-id before connecting anywhere', async () => {
  const refusal = isRefusal(`--app-id must be ${FORM}, got "a.b" (from flag --app-id)`);
  await assert.rejects(
    runTopics(['create', '--brokers', '127.0.0.1:1', '--app-id', 'a.b'], () => undefined, ENV),
    refusal,
  );
  await assert.rejects(
    runInject(
      ['http://a.test/', ...KAFKA, '--app-id', 'a.b'],
      () => undefined,
      () => undefined,
      ENV,
    ),
    refusal,
  );
  assert.throws(() => parseControlArgs(['pause', 'example.com', ...KAFKA, '--app-id', 'a.b'], 0, ENV), refusal);
});

test('topics list --app-id names the prefixed topics; control --brokers carries the id; control --data refuses it', async () => {
  const lines: string[] = [];
  await runTopics(['list', '--app-id', 'news'], (l) => lines.push(l), ENV);
  const names = lines.map((l) => l.split('\t')[0]!);
  assert.ok(names.includes('news.links') && names.includes('news-dead-letters'), names.join(', '));
  const { target } = parseControlArgs(['pause', 'example.com', ...KAFKA, '--app-id', 'news'], 0, ENV);
  assert.equal('applicationId' in target && target.applicationId, 'news');
  assert.throws(
    () => parseControlArgs(['pause', 'example.com', '--data', dir, '--app-id', 'news'], 0, ENV),
    isRefusal('--app-id is for --brokers (Kafka); an embedded crawl is named by its --data DIR'),
  );
});

test('replay takes --app-id with --brokers for the changelog names, and refuses it or a malformed one otherwise', async () => {
  const o = parseReplayArgs(
    'verify',
    ['--store', 'all', '--data', dir, '--brokers', '127.0.0.1:1', '--app-id', 'news'],
    ENV,
  );
  assert.equal(o.topology.changelogTopic('seen'), 'news-seen-changelog');
  assert.throws(
    () => parseReplayArgs('verify', ['--store', 'all', '--data', dir, '--app-id', 'news'], ENV),
    isRefusal('replay verify: --app-id needs --brokers (an embedded crawl is named by its --data DIR)'),
  );
  assert.throws(
    () =>
      parseReplayArgs('rebuild', ['--store', 'all', '--data', dir, '--brokers', '127.0.0.1:1', '--app-id', 'N'], ENV),
    isRefusal(`--app-id must be ${FORM}, got "N" (from flag --app-id)`),
  );
  await assert.rejects(
    runReparse(['--data', dir, '--app-id', 'news'], () => undefined, ENV),
    isRefusal('replay reparse: --app-id needs --brokers (an embedded crawl is named by its --data DIR)'),
  );
  await assert.rejects(
    runReparse(['--data', dir, ...KAFKA, '--app-id', 'x_y'], () => undefined, ENV),
    isRefusal(`--app-id must be ${FORM}, got "x_y" (from flag --app-id)`),
  );
});
