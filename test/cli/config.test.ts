import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { InvalidOptionError } from '../../core/errors.js';
import { defaultCrawlConfig, type CrawlConfig } from '../../processors/common/crawl-config.js';
import { resolveSettings, settingsTable } from '../../cli/config-sources.js';
import { CRAWL_USAGE, parseCrawlArgs } from '../../cli/options.js';
import { envName, SETTINGS, settingsOf } from '../../cli/settings.js';
import { RUN_USAGE } from '../../cli/run-options.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

function withFile(t: { after: (fn: () => void) => void }, text: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'crawlstream-config-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'crawl.yaml');
  writeFileSync(file, text);
  return file;
}

test('the same crawl configured by file, by environment and by flags has the same effective configuration', (t) => {
  const file = withFile(
    t,
    'data: /tmp/crawl\nmin-delay: 2500\nip-gap: 40\nresolve:\n  - "*.test=127.0.0.1"\nuntil-idle: true\nlog-format: json\n',
  );
  const byFile = parseCrawlArgs(['--config', file], {});
  const byEnv = parseCrawlArgs([], {
    CRAWLSTREAM_DATA: '/tmp/crawl',
    CRAWLSTREAM_MIN_DELAY: '2500',
    CRAWLSTREAM_IP_GAP: '40',
    CRAWLSTREAM_RESOLVE: '*.test=127.0.0.1',
    CRAWLSTREAM_UNTIL_IDLE: 'true',
    CRAWLSTREAM_LOG_FORMAT: 'json',
  });
  const byFlags = parseCrawlArgs(
    [
      '--data',
      '/tmp/crawl',
      '--min-delay',
      '2500',
      '--ip-gap',
      '40',
      '--resolve',
      '*.test=127.0.0.1',
      '--until-idle',
      '--log-format',
      'json',
    ],
    {},
  );
  assert.deepEqual(byEnv, byFile);
  assert.deepEqual(byFlags, byFile);
  assert.equal(byFile.config.minDelayMs, 2500);
  assert.equal(byFile.config.ipGapMs, 40);
  assert.deepEqual(byFile.config.resolve, ['*.test=127.0.0.1']);
  assert.equal(byFile.untilIdle, true);
  assert.deepEqual(byFile.log, { format: 'json', level: 'info' });
});

test('flags win over the environment, which wins over the file, which wins over the default', (t) => {
  const file = withFile(t, 'min-delay: 3000\n');
  const env = { CRAWLSTREAM_MIN_DELAY: '4000' };
  const at = (args: string[], e: NodeJS.ProcessEnv) => resolveSettings(args, e, '').values.get('min-delay')!;
  assert.deepEqual(at(['--config', file, '--min-delay', '5000'], env), { value: 5000, source: 'flag --min-delay' });
  assert.deepEqual(at(['--config', file], env), { value: 4000, source: 'env CRAWLSTREAM_MIN_DELAY' });
  assert.deepEqual(at(['--config', file], {}), { value: 3000, source: `file ${file}` });
  assert.deepEqual(at([], {}), { value: 1000, source: 'default' });
  // the file may also be named by the environment
  assert.deepEqual(at([], { CRAWLSTREAM_CONFIG: file }), { value: 3000, source: `file ${file}` });
});

test('a bad value names the setting and where it came from', (t) => {
  const refused = (f: () => unknown, message: RegExp) =>
    assert.throws(f, (err: unknown) => err instanceof InvalidOptionError && message.test(err.message));
  refused(
    () => parseCrawlArgs(['--data', 'd'], { CRAWLSTREAM_IP_CONCURRENCY: '0' }),
    /--ip-concurrency must be a whole number of at least 1, got "0" \(from env CRAWLSTREAM_IP_CONCURRENCY\)/,
  );
  const file = withFile(t, 'data: d\nmax-body: lots\n');
  refused(
    () => parseCrawlArgs(['--config', file], {}),
    /--max-body must be a whole number .* \(from file .*crawl\.yaml\)/,
  );
  refused(() => parseCrawlArgs(['--config', withFile(t, 'min-dealy: 2000\n')], {}), /unknown setting "min-dealy"/);
  refused(() => parseCrawlArgs(['--data', 'd', '--log-level', 'loud'], {}), /--log-level must be one of debug, info/);
  refused(
    () => parseCrawlArgs(['--config', '/nonexistent/crawl.yaml'], {}),
    /--config \/nonexistent\/crawl\.yaml cannot be read: ENOENT/,
  );
});

test('every crawl knob has a named setting whose shown default is the one the crawl uses', () => {
  const bySetting = new Map(SETTINGS.filter((s) => s.config).map((s) => [s.config!, s]));
  // --no-system-dns, --ca-file, --no-sitemaps; --threads defaults to the machine's cores (options.test.ts);
  // --warc-store with the S3 settings (warc-store-options.test.ts); --memory-budget defaults to the
  // cgroup's limit (memory-limit.test.ts)
  const elsewhere: (keyof CrawlConfig)[] = [
    'systemDns',
    'extraCaPem',
    'sitemaps',
    'threads',
    'warcStore',
    'memoryBudgetBytes',
  ];
  for (const key of Object.keys(defaultCrawlConfig) as (keyof CrawlConfig)[]) {
    if (elsewhere.includes(key)) continue;
    const s = bySetting.get(key);
    assert.ok(s, `CrawlConfig.${key} has no setting`);
    if (s.kind !== 'list')
      assert.equal(
        s.default,
        String(s.scale === undefined ? defaultCrawlConfig[key] : (defaultCrawlConfig[key] as number) / s.scale),
        `default of --${s.name}`,
      );
  }
  const names = SETTINGS.map((s) => s.name);
  assert.equal(new Set(names).size, names.length);
  for (const s of settingsOf('run'))
    assert.match(RUN_USAGE, new RegExp(`--${s.name}\\b`), `run --help lacks --${s.name}`);
  for (const s of SETTINGS) {
    if (s.commands === undefined || s.commands.includes('crawl'))
      assert.match(CRAWL_USAGE, new RegExp(`--${s.name}\\b`), `--help lacks --${s.name}`);
    assert.match(envName(s), /^CRAWLSTREAM_[A-Z0-9_]+$/);
  }
});

test("the README's option table is the one generated from the settings schema", () => {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const begin = '<!-- settings:begin (generated: crawlstream config --markdown) -->\n';
  const end = '\n<!-- settings:end -->';
  const at = readme.indexOf(begin);
  assert.ok(at >= 0, 'README.md has no generated settings table');
  assert.equal(readme.slice(at + begin.length, readme.indexOf(end, at)), settingsTable());
});

test('sites: from the file and --site from flags are shown one key a line with their source; a flag replaces its key', async (t) => {
  const { runConfig } = await import('../../cli/config.js');
  const file = withFile(
    t,
    'sites:\n  example.org:\n    min-delay: 2500\n    headers:\n      X-Team: news desk\n  other.org:\n    budget: 40\n',
  );
  const lines: string[] = [];
  runConfig(['--config', file, '--site', 'other.org budget=90'], (l) => lines.push(l), {});
  const site = lines.filter((l) => l.startsWith('site '));
  assert.equal(site.length, 2, lines.join('\n'));
  assert.match(
    site[0]!,
    new RegExp(`^site example\\.org\\s+min-delay=2500 header\\.x-team=news desk\\s+file ${file}$`),
  );
  assert.match(site[1]!, /^site other\.org\s+budget=90\s+flag --site$/);
  const cmd = parseCrawlArgs(['--config', file, '--data', '/tmp/x'], {});
  assert.deepEqual(cmd.config.sites, [
    { key: 'example.org', override: { minDelayMs: 2500, headers: { 'x-team': 'news desk' } } },
    { key: 'other.org', override: { budget: 40 } },
  ]);
});

test('a sites: entry below the politeness floor stops the crawl before it starts, naming the file and key', (t) => {
  const file = withFile(t, 'sites:\n  slow.example:\n    min-delay: 200\n');
  assert.throws(
    () => parseCrawlArgs(['--config', file, '--data', '/tmp/x'], {}),
    (e: unknown) =>
      e instanceof InvalidOptionError &&
      e.message.startsWith(`${file}: sites.slow.example.min-delay must be a whole number of at least 1000 ms`),
  );
  const notMap = withFile(t, 'sites:\n  - example.org\n');
  assert.throws(
    () => parseCrawlArgs(['--config', notMap, '--data', '/tmp/x'], {}),
    /sites must be a mapping of site keys/,
  );
});

test('--accept-type takes comma-separated or repeated patterns and refuses one that is no media type', () => {
  const cmd = parseCrawlArgs(
    ['--data', '/tmp/x', '--accept-type', 'text/html,text/*', '--accept-type', 'image/png'],
    {},
  );
  assert.deepEqual(cmd.config.acceptTypes, ['text/html', 'text/*', 'image/png']);
  assert.throws(
    () => parseCrawlArgs(['--data', '/tmp/x', '--accept-type', 'html'], {}),
    /--accept-type must be a media type pattern like text\/html or text\/\*, got "html" \(from flag --accept-type\)/,
  );
});
