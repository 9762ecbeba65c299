import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The built CLI, as `crawlstream` runs it. */
const CLI = fileURLToPath(new URL('../../cli/main.js', import.meta.url));

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs the CLI with `args` and only `env` (plus PATH) in its environment. */
function cli(args: readonly string[], env: NodeJS.ProcessEnv = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      env: { PATH: process.env.PATH, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** `cli` over many argument lists, two at a time (the machine is shared). */
async function cliAll(lists: readonly (readonly string[])[], env: NodeJS.ProcessEnv = {}): Promise<Run[]> {
  const runs: Run[] = new Array<Run>(lists.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < lists.length) {
      const i = next++;
      runs[i] = await cli(lists[i]!, env);
    }
  };
  await Promise.all([worker(), worker()]);
  return runs;
}

const show = (args: readonly string[], r: Run): string =>
  `crawlstream ${args.join(' ')} → ${r.code}\n--- stdout\n${r.stdout.slice(0, 2000)}\n--- stderr\n${r.stderr.slice(0, 2000)}`;

/** Every command and subcommand, as typed after `crawlstream`. */
const COMMANDS = [
  ['crawl'],
  ['export'],
  ['control'],
  ['demo'],
  ['topics'],
  ['topics', 'create'],
  ['topics', 'list'],
  ['topics', 'manifest'],
  ['run'],
  ['inject'],
  ['replay'],
  ['replay', 'verify'],
  ['replay', 'rebuild'],
  ['replay', 'dump'],
  ['replay', 'reparse'],
  ['config'],
  ['dashboard'],
  ['status'],
  ['help'],
] as const;

/** The first line of a command's usage: `replay verify` shows replay's, `replay reparse` its own. */
function usageHead(command: readonly string[]): RegExp {
  if (command[0] === 'help') return /^crawlstream — /;
  const name = command[0] === 'replay' && command[1] === 'reparse' ? 'replay reparse' : command[0];
  return new RegExp(`^usage: crawlstream ${name}( |\n)`);
}

/** The stack trace of an uncaught error: what the CLI must never print for a mistake on its command line. */
const STACK = /^\s+at .*\(?.*:\d+:\d+\)?$/m;

test('the top-level usage lists every command this test knows, one `  crawlstream <command> ...` line at least each', async () => {
  for (const args of [['--help'], ['-h'], ['help']]) {
    const r = await cli(args);
    assert.equal(r.code, 0, show(args, r));
    const listed = new Set([...r.stdout.matchAll(/^ {2}crawlstream ([a-z-]+)/gm)].map((m) => m[1]));
    assert.deepEqual([...listed].sort(), [...new Set(COMMANDS.map((c) => c[0]))].sort(), show(args, r));
  }
  const bare = await cli([]);
  assert.equal(bare.code, 2, 'no command at all is a mistake');
  assert.match(bare.stderr, /^ {2}crawlstream crawl /m);
});

test('every command and subcommand prints its usage for --help and -h, exit 0, nothing on stderr', async () => {
  const lists = COMMANDS.flatMap((c) => [
    [...c, '--help'],
    [...c, '-h'],
  ]);
  const runs = await cliAll(lists);
  lists.forEach((args, i) => {
    const r = runs[i]!;
    assert.equal(r.code, 0, show(args, r));
    assert.match(r.stdout, usageHead(args.slice(0, -1)), show(args, r));
    assert.equal(r.stderr, '', show(args, r));
  });
  // help COMMAND is COMMAND --help
  const viaHelp = await cli(['help', 'export']);
  assert.equal(viaHelp.code, 0);
  assert.equal(viaHelp.stdout, runs[lists.findIndex((a) => a[0] === 'export')]!.stdout);
  const reparse = await cli(['help', 'replay', 'reparse']);
  assert.equal(reparse.stdout, runs[lists.findIndex((a) => a[1] === 'reparse')]!.stdout);
});

test("a command's --help lists exactly the options it takes, generated from the settings schema", async () => {
  const help = async (...args: string[]): Promise<string> => (await cli([...args, '--help'])).stdout;
  const options = (text: string): string[] => [...text.matchAll(/^ {2}(--[a-z-]+)/gm)].map((m) => m[1]!);
  assert.deepEqual(options(await help('export')), ['--config', '--data']);
  assert.deepEqual(options(await help('demo')), ['--config', '--data', '--quiet']);
  const control = options(await help('control'));
  for (const o of ['--data', '--brokers', '--registry', '--min-gap', '--app-id', '--kafka-tls', '--registry-username'])
    assert.ok(control.includes(o), `control --help lacks ${o}: ${control.join(' ')}`);
  assert.ok(!control.includes('--min-delay'), 'control takes no crawl setting');
  const topics = options(await help('topics'));
  for (const o of [
    '--brokers',
    '--partitions',
    '--replication-factor',
    '--keep-retention-ms',
    '--kafka-sasl-mechanism',
  ])
    assert.ok(topics.includes(o), `topics --help lacks ${o}`);
  assert.ok(!topics.includes('--registry-username'), 'topics does not talk to the registry');
});

test('an unknown flag is one line naming it, then the usage; exit 2, no stack trace, for every command', async () => {
  const lists = COMMANDS.map((c) => [...c, '--no-such-flag']);
  const runs = await cliAll(lists);
  lists.forEach((args, i) => {
    const r = runs[i]!;
    assert.equal(r.code, 2, show(args, r));
    assert.equal(r.stdout, '', show(args, r));
    assert.doesNotMatch(r.stderr, STACK, show(args, r));
    const [first, ...rest] = r.stderr.split('\n');
    assert.match(first!, /--no-such-flag/, show(args, r));
    if (args[0] === 'help') return; // `help --no-such-flag`: no such command
    assert.match(first!, new RegExp(`^crawlstream ${args[0]}: `), show(args, r));
    assert.match(rest.join('\n'), /^usage: crawlstream /m, show(args, r));
  });
});

test('a bad value, a missing value, a missing required option or an unknown subcommand: exit 2 with one line naming it', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cs-grammar-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const cases: [string[], RegExp][] = [
    [['crawl', '--data', dir, '--min-delay', '5'], /--min-delay must be a whole number of at least 1000, got "5"/],
    [['crawl', 'https://example.com/'], /--data DIR is required/],
    [['export', 'page-records', '--data'], /--data <value>' argument missing/],
    [['export', 'page-records'], /--data DIR is required/],
    [
      ['export', 'pages', '--data', dir],
      /export needs one of page-records, page-content, links, fetch-results, got "pages"/,
    ],
    [['control', 'slow', 'example.com', '--data', dir, '--min-gap', 'soon'], /--min-gap must be a whole number/],
    [['control', 'shout', 'example.com', '--data', dir], /control needs one of block, slow, pause, resume/],
    [['demo', '--quiet=yes'], /--quiet' does not take an argument/],
    [['topics', 'list', '--partitions', '0'], /--partitions must be a whole number of at least 1, got "0"/],
    [['topics', 'frob'], /unknown topics subcommand "frob"/],
    [['topics', 'create'], /--brokers HOST:PORT is required/],
    [['run', '--role', 'boss', '--data', dir], /--role must be one of frontier, fetcher, parser, all, got "boss"/],
    [['inject', 'https://a.test/', '--registry', 'http://127.0.0.1:1'], /--brokers HOST:PORT,.. is required/],
    [['inject', '--brokers', '127.0.0.1:1', '--registry', 'http://127.0.0.1:1', '--partitions', 'x'], /--partitions/],
    [['replay', 'rewind', '--store', 'all'], /unknown replay subcommand "rewind"/],
    [['replay', 'verify', '--store', 'all', '--data', dir, '--partition', 'p'], /--partition must be a whole number/],
    [['replay', 'reparse', '--data', dir, '--partitions', '-2'], /--partitions/],
    [['config', '--log-level', 'loud'], /--log-level must be one of debug, info, warn, error, got "loud"/],
    [['dashboard', 'now'], /dashboard takes no arguments, got "now"/],
    [['frob'], /unknown command "frob"/],
  ];
  const runs = await cliAll(cases.map(([args]) => args));
  cases.forEach(([args, message], i) => {
    const r = runs[i]!;
    assert.equal(r.code, 2, show(args, r));
    assert.doesNotMatch(r.stderr, STACK, show(args, r));
    assert.match(r.stderr.split('\n')[0]!, message, show(args, r));
  });
});

test('config shows the effective settings without --data, marking the required ones unset; --config FILE works alone', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cs-grammar-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const bare = await cli(['config']);
  assert.equal(bare.code, 0, show(['config'], bare));
  const line = (r: Run, name: string): string => r.stdout.split('\n').find((l) => l.startsWith(`${name} `)) ?? '';
  assert.match(line(bare, 'data'), /^data +\(unset, required by crawl, run, export, replay, replay reparse\)$/);
  // inject takes --data DIR (an embedded crawl) or --brokers: neither is required alone
  assert.match(line(bare, 'brokers'), /\(unset, required by run\)$/);
  assert.match(line(bare, 'seeds'), /^seeds +\(unset\)$/);
  assert.match(line(bare, 'min-delay'), /^min-delay +1000 +default$/);
  const file = join(dir, 'crawl.yaml');
  writeFileSync(file, 'min-delay: 2500\nbrokers: 127.0.0.1:9092\n');
  const withFile = await cli(['config', '--config', file]);
  assert.equal(withFile.code, 0, show(['config', '--config', file], withFile));
  assert.match(line(withFile, 'min-delay'), new RegExp(`^min-delay +2500 +file ${file}$`));
  assert.match(line(withFile, 'brokers'), new RegExp(`^brokers +127.0.0.1:9092 +file ${file}$`));
  assert.match(line(withFile, 'data'), /\(unset, required by/);
});

test('file < environment < flags for the options of inject, control, topics and export', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cs-grammar-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  /** Writes a --config file with `yaml`; returns its path. */
  const config = (name: string, yaml: string): string => {
    const file = join(dir, `${name}.yaml`);
    writeFileSync(file, yaml);
    return file;
  };
  /** The same command with the setting from the file only, then also the environment, then also a flag. */
  const layers = async (
    args: string[],
    file: string,
    env: NodeJS.ProcessEnv,
    flag: string[],
  ): Promise<[Run, Run, Run]> => [
    await cli([...args, '--config', file]),
    await cli([...args, '--config', file], env),
    await cli([...args, '--config', file, ...flag], env),
  ];

  // topics: --partitions, --app-id
  const topics = await layers(
    ['topics', 'list'],
    config('topics', 'partitions: 2\napp-id: from-file\n'),
    { CRAWLSTREAM_PARTITIONS: '3', CRAWLSTREAM_APP_ID: 'from-env' },
    ['--partitions', '5', '--app-id', 'from-flag'],
  );
  for (const [r, n, id] of [
    [topics[0], 2, 'from-file'],
    [topics[1], 3, 'from-env'],
    [topics[2], 5, 'from-flag'],
  ] as const) {
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`^${id}\\.links\\tpartitions=${n}\\t`, 'm'), r.stdout);
  }

  // control: --data and --min-gap
  const data = (name: string): string => {
    mkdirSync(join(dir, name), { recursive: true });
    return join(dir, name);
  };
  const control = await layers(
    ['control', 'slow', 'example.com'],
    config('control', `data: ${data('file')}\nmin-gap: 2000\n`),
    { CRAWLSTREAM_DATA: data('env'), CRAWLSTREAM_MIN_GAP: '3000' },
    ['--data', data('flag'), '--min-gap', '4000'],
  );
  for (const [r, where, gap] of [
    [control[0], 'file', 2000],
    [control[1], 'env', 3000],
    [control[2], 'flag', 4000],
  ] as const) {
    assert.equal(r.code, 0, r.stderr);
    assert.match(
      r.stdout,
      new RegExp(`^queued SLOW example\\.com \\(min gap ${gap} ms\\); a running crawl on ${join(dir, where)} `),
    );
  }

  // export: --data (a dir that does not exist is named in the refusal)
  const exported = await layers(
    ['export', 'page-records'],
    config('export', `data: ${join(dir, 'no-file')}\n`),
    { CRAWLSTREAM_DATA: join(dir, 'no-env') },
    ['--data', join(dir, 'no-flag')],
  );
  exported.forEach((r, i) => {
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, new RegExp(`--data ${join(dir, ['no-file', 'no-env', 'no-flag'][i]!)} does not exist`));
  });

  // inject: --seeds (read before anything connects) and --brokers
  const kafka = { CRAWLSTREAM_BROKERS: '127.0.0.1:1', CRAWLSTREAM_REGISTRY: 'http://127.0.0.1:1' };
  const injected = await layers(
    ['inject'],
    config('inject', `seeds: ${join(dir, 'seeds-file')}\nbrokers: 127.0.0.1:1\nregistry: http://127.0.0.1:1\n`),
    { ...kafka, CRAWLSTREAM_SEEDS: join(dir, 'seeds-env') },
    ['--seeds', join(dir, 'seeds-flag')],
  );
  injected.forEach((r, i) => {
    assert.equal(r.code, 2, r.stderr);
    assert.match(
      r.stderr,
      new RegExp(`--seeds ${join(dir, ['seeds-file', 'seeds-env', 'seeds-flag'][i]!)} cannot be read`),
    );
  });
});

test("a --config file shared by several commands: other commands' keys are ignored, a key no command knows is refused", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cs-grammar-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const shared = join(dir, 'shared.yaml');
  writeFileSync(shared, 'partitions: 2\nmin-delay: 2000\nrole: frontier\nbrokers: 127.0.0.1:1\n');
  const listed = await cli(['topics', 'list', '--config', shared]);
  assert.equal(listed.code, 0, listed.stderr);
  assert.match(listed.stdout, /^links\tpartitions=2\t/m);
  const typo = join(dir, 'typo.yaml');
  writeFileSync(typo, 'partitons: 2\n');
  const refused = await cli(['topics', 'list', '--config', typo]);
  assert.equal(refused.code, 2);
  assert.match(refused.stderr.split('\n')[0]!, /unknown setting "partitons" \(see crawlstream topics --help\)/);
});
