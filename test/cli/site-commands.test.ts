import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InvalidOptionError } from '../../core/errors.js';
import { parseControlArgs } from '../../cli/control.js';
import { runInject } from '../../cli/inject.js';
import { seedInbox } from '../../cli/seed-inbox.js';

test('control set SITE KEY=VALUE... becomes a SET command with its settings', () => {
  const { target, command } = parseControlArgs(
    ['set', 'www.example.org', 'min-delay=3000', 'max-depth=4', '--data', '/tmp/x'],
    7,
    {},
  );
  assert.deepEqual(target, { dataDir: '/tmp/x' });
  assert.deepEqual(command, {
    site: 'example.org',
    action: 'SET',
    minGapMs: null,
    issuedAt: 7,
    issuedBy: null,
    settings: { 'min-delay': '3000', 'max-depth': '4' },
  });
});

test('control set refuses what could break the floor, unknown keys and a missing KEY=VALUE, before sending anything', () => {
  const refused: [string[], RegExp][] = [
    [['set', 'example.org', 'min-delay=999'], /min-delay must be a whole number of at least 1000 ms/],
    [['set', 'example.org', 'header.X=1'], /"header\.X" cannot be set live/],
    [['set', 'example.org', 'fast'], /control set takes KEY=VALUE, got "fast"/],
    [['set', 'example.org'], /control set needs KEY=VALUE/],
    [['pause', 'example.org', 'extra'], /control pause takes one SITE, got also "extra"/],
  ];
  for (const [args, message] of refused)
    assert.throws(
      () => parseControlArgs([...args, '--data', '/tmp/x'], 0, {}),
      (e: unknown) => e instanceof InvalidOptionError && message.test(e.message),
      args.join(' '),
    );
});

test('inject --data queues the valid seeds in the data dir for the running crawl and reports the bad ones', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'crawlstream-inject-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const out: string[] = [];
  const err: string[] = [];
  const code = await runInject(
    ['http://A.test/x', 'not a url', 'http://b.test/', '--data', dir],
    (l) => out.push(l),
    (l) => err.push(l),
    {},
  );
  assert.equal(code, 0);
  assert.match(out.join('\n'), /queued 2 seeds for 2 sites/);
  assert.match(err.join('\n'), /skipping seed "not a url"/);
  const files = readdirSync(seedInbox(dir));
  assert.equal(files.length, 1);
  const queued = JSON.parse(readFileSync(join(seedInbox(dir), files[0]!), 'utf8')) as { seeds: string[] };
  assert.deepEqual(queued.seeds, ['http://a.test/x', 'http://b.test/']);
});

test('inject needs --data or --brokers, and refuses a data dir that does not exist', async () => {
  const quiet = () => {};
  await assert.rejects(runInject(['http://a.test/'], quiet, quiet, {}), /--data DIR \(embedded crawl\) or --brokers/);
  await assert.rejects(
    runInject(['http://a.test/', '--data', '/nonexistent/crawl'], quiet, quiet, {}),
    /--data \/nonexistent\/crawl does not exist/,
  );
  await assert.rejects(
    runInject(['http://a.test/', '--data', '/tmp', '--brokers', '127.0.0.1:1'], quiet, quiet, {}),
    /give --data DIR \(embedded crawl\) or --brokers \(Kafka\), not both/,
  );
});
