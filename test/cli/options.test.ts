import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseCrawlArgs } from '../../cli/options.js';
import { seedBatches } from '../../cli/crawl.js';
import { InvalidOptionError } from '../../core/errors.js';
import { defaultCrawlConfig } from '../../processors/common/crawl-config.js';

function refuses(args: string[], message: string | RegExp): void {
  assert.throws(
    () => parseCrawlArgs(args, {}),
    (err: unknown) => {
      assert.ok(err instanceof InvalidOptionError, `expected InvalidOptionError, got ${String(err)}`);
      assert.equal(err.code, 'CS_INVALID_OPTION');
      if (typeof message === 'string') assert.equal(err.message.split('\n')[0], message);
      else assert.match(err.message, message);
      return true;
    },
  );
}

test('the defaults: no seeds, 4 partitions, the default crawl config', () => {
  const cmd = parseCrawlArgs(['--data', '/tmp/x']);
  assert.deepEqual(cmd.seeds, []);
  assert.equal(cmd.dataDir, '/tmp/x');
  assert.equal(cmd.partitions, 4);
  assert.equal(cmd.untilIdle, false);
  assert.equal(cmd.maxPages, undefined);
  assert.equal(cmd.durationMs, undefined);
  // the library's default is one thread; the command line's, every core of the machine
  assert.deepEqual(cmd.config, {
    ...defaultCrawlConfig,
    resolve: [],
    allowIps: [],
    systemDns: true,
    threads: os.availableParallelism(),
  });
});

test('--threads N sets the threads of the process; 0 is refused', () => {
  assert.equal(parseCrawlArgs(['--data', '/tmp/x', '--threads', '3']).config.threads, 3);
  assert.equal(parseCrawlArgs(['--data', '/tmp/x', '--threads', '1']).config.threads, 1);
  refuses(['--data', '/tmp/x', '--threads', '0'], /--threads/);
});

test('--data is required, and the message shows the usage', () => {
  refuses(['https://example.com/'], '--data DIR is required');
  refuses([], /usage: crawlstream crawl/);
});

test('--min-delay below the 1000 ms floor is refused, naming the option and the value', () => {
  refuses(
    ['--data', 'd', '--min-delay', '500'],
    '--min-delay must be a whole number of at least 1000, got "500" (from flag --min-delay)',
  );
  assert.equal(parseCrawlArgs(['--data', 'd', '--min-delay', '1000']).config.minDelayMs, 1000);
  assert.equal(parseCrawlArgs(['--data', 'd', '--min-delay', '2500']).config.minDelayMs, 2500);
});

test('--min-delay that is not a whole number is refused', () => {
  refuses(
    ['--data', 'd', '--min-delay', 'abc'],
    '--min-delay must be a whole number of at least 1000, got "abc" (from flag --min-delay)',
  );
  refuses(
    ['--data', 'd', '--min-delay', '1500.5'],
    '--min-delay must be a whole number of at least 1000, got "1500.5" (from flag --min-delay)',
  );
  refuses(['--data', 'd', '--min-delay', '-2000'], /--min-delay/);
});

test('--resolve without PATTERN=IP is refused', () => {
  refuses(
    ['--data', 'd', '--resolve', 'nonsense'],
    "--resolve must be PATTERN=IP (e.g. 'site.test=127.0.0.1' or '*.test=::1'), got 'nonsense'",
  );
  refuses(
    ['--data', 'd', '--resolve', 'site.test=not-an-ip'],
    "--resolve 'site.test=not-an-ip': 'not-an-ip' is not an IPv4 or IPv6 address",
  );
  assert.deepEqual(
    parseCrawlArgs(['--data', 'd', '--resolve', '*.test=127.0.0.1', '--resolve', 'a.b=::1']).config.resolve,
    ['*.test=127.0.0.1', 'a.b=::1'],
  );
});

test('--allow-ip with an impossible address is refused, naming the option and the value', () => {
  refuses(
    ['--data', 'd', '--allow-ip', '300.1.1.1/8'],
    /^--allow-ip .*'300\.1\.1\.1\/8'.*is not an IPv4 or IPv6 address/,
  );
  refuses(['--data', 'd', '--allow-ip', '10.0.0.1/8'], /^--allow-ip .*host bits set; did you mean '10\.0\.0\.0\/8'\?/);
  assert.deepEqual(parseCrawlArgs(['--data', 'd', '--allow-ip', '10.0.0.0/8']).config.allowIps, ['10.0.0.0/8']);
});

test('an unreadable --seeds file is refused with its path and the reason', () => {
  const missing = path.join(os.tmpdir(), 'crawlstream-no-such-seeds.txt');
  refuses(['--data', 'd', '--seeds', missing], `--seeds ${missing} cannot be read: ENOENT`);
  refuses(['--data', 'd', '--seeds', os.tmpdir()], `--seeds ${os.tmpdir()} cannot be read: EISDIR`);
});

test('seeds come from positionals and then the --seeds file, without comments or blank lines', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'crawlstream-seeds-'));
  try {
    const file = path.join(dir, 'seeds.txt');
    fs.writeFileSync(
      file,
      '# my seeds\r\nhttps://a.example/\n\n   https://b.example/x   # the b site\n#https://commented.example/\n  \nhttps://c.example/\n',
    );
    const cmd = parseCrawlArgs(['https://first.example/', '--seeds', file, '--data', 'd']);
    assert.deepEqual(cmd.seeds, [
      'https://first.example/',
      'https://a.example/',
      'https://b.example/x',
      'https://c.example/',
    ]);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('numeric and boolean options are parsed into the command', () => {
  const cmd = parseCrawlArgs([
    '--data',
    'd',
    '--until-idle',
    '--max-pages',
    '50',
    '--duration',
    '30',
    '--partitions',
    '8',
    '--quiet',
    '--no-system-dns',
    '--fetch-timeout',
    '3000',
    '--robots-retry',
    '500',
    '--user-agent',
    'mybot/2 (+x)',
  ]);
  assert.equal(cmd.untilIdle, true);
  assert.equal(cmd.maxPages, 50);
  assert.equal(cmd.durationMs, 30_000);
  assert.equal(cmd.partitions, 8);
  assert.equal(cmd.quiet, true);
  assert.equal(cmd.config.systemDns, false);
  assert.equal(cmd.config.fetchTimeoutMs, 3000);
  assert.equal(cmd.config.headersTimeoutMs, 3000);
  assert.equal(cmd.config.connectTimeoutMs, 3000);
  assert.equal(cmd.config.robotsRetryMs, 500);
  assert.equal(cmd.config.userAgent, 'mybot/2 (+x)');
});

test('unknown options and zero partitions are refused', () => {
  refuses(['--data', 'd', '--bogus'], /--bogus/);
  refuses(
    ['--data', 'd', '--partitions', '0'],
    '--partitions must be a whole number of at least 1, got "0" (from flag --partitions)',
  );
  refuses(['--data', 'd', '--user-agent', '(bad)'], /user agent must start with a product token/);
});

test('seedBatches groups seeds by site, one batch per site at depth 0', () => {
  const warnings: string[] = [];
  const batches = seedBatches(
    ['https://www.example.com/', 'https://blog.example.com/post', 'http://other.org/a', 'https://www.example.com/b'],
    123,
    (l) => warnings.push(l),
  );
  assert.deepEqual(warnings, []);
  assert.deepEqual(batches, [
    {
      site: 'example.com',
      sourceUrl: null,
      discoveredAt: 123,
      links: [
        { url: 'https://www.example.com/', depth: 0, redirectHops: 0 },
        { url: 'https://blog.example.com/post', depth: 0, redirectHops: 0 },
        { url: 'https://www.example.com/b', depth: 0, redirectHops: 0 },
      ],
    },
    {
      site: 'other.org',
      sourceUrl: null,
      discoveredAt: 123,
      links: [{ url: 'http://other.org/a', depth: 0, redirectHops: 0 }],
    },
  ]);
});

test('seedBatches skips invalid seeds with a warning that names them and the reason', () => {
  const warnings: string[] = [];
  const batches = seedBatches(['ftp://x', 'not a url', 'https://ok.example/'], 0, (l) => warnings.push(l));
  assert.deepEqual(warnings, ['skipping seed "ftp://x": unsupported-scheme', 'skipping seed "not a url": bad-url']);
  assert.deepEqual(
    batches.map((b) => b.links.map((l) => l.url)),
    [['https://ok.example/']],
  );
});

test('trap options: --max-hops, --seed-budget and --template-allowance[-per-inlink] set their rules', () => {
  const c = parseCrawlArgs([
    '--data',
    'd',
    '--max-hops',
    '7',
    '--template-allowance',
    '20',
    '--template-allowance-per-inlink',
    '5',
    '--site-budget',
    '50',
    '--seed-budget',
    '5000',
  ]).config;
  assert.equal(c.maxHops, 7);
  assert.equal(c.templateAllowance, 20);
  assert.equal(c.templateAllowancePerInlink, 5);
  assert.equal(c.sitePageBudget, 50);
  assert.equal(c.seedPageBudget, 5000);
  refuses(['--data', 'd', '--max-hops', '0'], /--max-hops/);
  refuses(['--data', 'd', '--seed-budget', 'lots'], /--seed-budget/);
  refuses(['--data', 'd', '--template-allowance', '2.5'], /--template-allowance/);
});

test('--allow, --deny, --scope, --max-depth and the extension flags are checked before a crawl starts', () => {
  refuses(
    ['--data', 'd', '--deny', '*.example.org'],
    /^--deny rule "\*\.example\.org": must start with host:, surt: or re:/,
  );
  refuses(['--data', 'd', '--allow', 're:(a'], /^--allow rule "re:\(a": not an RE2 regular expression/);
  refuses(['--data', 'd', '--deny-extension', 'tar.gz'], /^--deny-extension takes a path suffix .* got "tar\.gz"/);
  refuses(['--data', 'd', '--scope', 'same-site'], /--scope/);
  refuses(['--data', 'd', '--max-depth', '-1'], /--max-depth/);
  const c = parseCrawlArgs([
    '--data',
    'd',
    '--scope',
    'seed-prefixes',
    '--allow',
    'host:*.example.org',
    '--deny',
    're:\\?replytocom=',
    '--deny',
    'surt:(org,example,)/private/',
    '--max-depth',
    '4',
    '--deny-extension',
    '.PDF',
    '--allow-extension',
    'svg',
  ]).config;
  assert.equal(c.scope, 'seed-prefixes');
  assert.deepEqual(c.allowRules, ['host:*.example.org']);
  assert.deepEqual(c.denyRules, ['re:\\?replytocom=', 'surt:(org,example,)/private/']);
  assert.equal(c.maxDepth, 4);
  assert.deepEqual(c.denyExtensions, ['pdf']);
  assert.deepEqual(c.allowExtensions, ['svg']);
});
