#!/usr/bin/env -S node --max-semi-space-size=64
// A 64 MiB young generation (V8's default is 16): a crawl's pages and records die young in bulk, and
// scavenging them every few MiB cost ~20 % of its CPU a page (docs/BENCHMARKS.md, real pages,
// fourth sitting). deploy/Dockerfile's ENTRYPOINT passes the same flags; so must `node` run by hand.
import { isCrawlError } from '../core/errors.js';

type Out = (line: string) => void;

/**
 * One command of the CLI. `crawlstream NAME --help` (or `-h`) prints `usage`; a refused option
 * (CS_INVALID_OPTION) prints one line naming it, then `usage`, and exits 2. Adding a command is
 * adding one entry to COMMANDS.
 */
interface Command {
  readonly name: string;
  /** What follows `crawlstream` in the top-level usage, and the one-line summary beside it. */
  readonly synopsis: string;
  readonly summary: string;
  /** Further lines of the top-level usage (a command's subcommands), as [synopsis, summary]. */
  readonly more?: readonly (readonly [string, string])[];
  /**
   * Its `--help`; `sub` is the first argument, for subcommands with a usage of their own. A
   * command's module is loaded only when that command runs or is asked for its usage: the crawl
   * topology alone takes ~0.3 s of CPU to load, which `--help` of `status` should not pay.
   */
  readonly usage: (sub: string | undefined) => Promise<string>;
  /** Runs it on the arguments after its name; resolves to the exit code. */
  readonly run: (args: string[], out: Out) => Promise<number> | number;
}

const err: Out = (line) => void process.stderr.write(`${line}\n`);

/** Every command, in the order the top-level usage lists them. */
const COMMANDS: readonly Command[] = [
  {
    name: 'crawl',
    synopsis: 'crawl [URL...] [--seeds FILE] --data DIR [options]',
    summary: 'crawl on the embedded engine',
    usage: async () => (await import('./options.js')).CRAWL_USAGE,
    run: async (args, out) => {
      const [{ runCrawl }, { parseCrawlArgs }] = await Promise.all([import('./crawl.js'), import('./options.js')]);
      return (await runCrawl(parseCrawlArgs(args), out)).exitCode;
    },
  },
  {
    name: 'export',
    synopsis: 'export page-records --data DIR',
    summary: 'page records as JSON lines',
    usage: async () => (await import('./export.js')).EXPORT_USAGE,
    run: async (args, out) => {
      await (await import('./export.js')).runExport(args, out); // resolves to the number of records written
      return 0;
    },
  },
  {
    name: 'control',
    synopsis: 'control block|slow|pause|resume SITE --data DIR',
    summary: 'operator control of one site (or --brokers B --registry URL)',
    usage: async () => (await import('./control.js')).CONTROL_USAGE,
    run: async (args, out) => (await import('./control.js')).runControl(args, out),
  },
  {
    name: 'demo',
    synopsis: 'demo [--data DIR]',
    summary: 'crawl the bundled test web, judge politeness',
    usage: async () => (await import('./demo.js')).DEMO_USAGE,
    run: async (args, out) => (await import('./demo.js')).runDemo(args, out),
  },
  {
    name: 'topics',
    synopsis: 'topics create --brokers B [--partitions N]',
    summary: 'create every Kafka topic (compacted changelogs)',
    more: [['topics list|manifest [--partitions N]', 'the topics create makes, as lines or Strimzi resources']],
    usage: async () => (await import('./topics.js')).TOPICS_USAGE,
    run: async (args, out) => (await import('./topics.js')).runTopics(args, out),
  },
  {
    name: 'run',
    synopsis: 'run --role R --brokers B --registry URL --data DIR',
    summary: 'one instance of a role on Kafka (frontier|fetcher|parser|all)',
    usage: async () => (await import('./run-options.js')).RUN_USAGE,
    run: async (args, out) => {
      const [{ runRole }, { parseRunArgs }] = await Promise.all([import('./run.js'), import('./run-options.js')]);
      return runRole(parseRunArgs(args), out, err);
    },
  },
  {
    name: 'inject',
    synopsis: 'inject --seeds FILE --brokers B --registry URL',
    summary: 'seed URLs into the links topic',
    usage: async () => (await import('./inject.js')).INJECT_USAGE,
    run: async (args, out) => (await import('./inject.js')).runInject(args, out, err),
  },
  {
    name: 'replay',
    synopsis: 'replay verify --store NAME|all --data DIR',
    summary: 'verify local stores against their changelogs (Kafka: --brokers B)',
    more: [
      ['replay rebuild --store NAME|all --data DIR', 'rebuild stores from their changelogs, swapped in when complete'],
      ['replay dump --store NAME --data DIR', "print a store's entries, for byte-for-byte comparison"],
      ['replay reparse --data DIR', 're-derive page records from archived payloads'],
    ],
    usage: async (sub) =>
      sub === 'reparse'
        ? (await import('./replay-reparse.js')).REPARSE_USAGE
        : (await import('./replay.js')).REPLAY_USAGE,
    run: async (args, out) => (await import('./replay.js')).runReplay(args, out),
  },
  {
    name: 'config',
    synopsis: 'config [--config FILE] [options] [--markdown]',
    summary: 'effective settings and where each came from',
    usage: async () => (await import('./config.js')).CONFIG_USAGE,
    run: async (args, out) => (await import('./config.js')).runConfig(args, out),
  },
  {
    name: 'dashboard',
    synopsis: 'dashboard',
    summary: 'the Grafana dashboard JSON, from the metric catalogue',
    usage: async () => (await import('./dashboard.js')).DASHBOARD_USAGE,
    run: async (args, out) => (await import('./dashboard.js')).runDashboard(args, out),
  },
  {
    name: 'status',
    synopsis: 'status [SITE] --ops URL [--json]',
    summary: "a running crawl's tasks, or one site's queue, back-off and robots.txt",
    usage: async () => (await import('./status.js')).STATUS_USAGE,
    run: async (args, out) => (await import('./status.js')).runStatus(args, out),
  },
  {
    name: 'help',
    synopsis: 'help [COMMAND [SUBCOMMAND]]',
    summary: "this text, or a command's usage (as COMMAND --help)",
    usage: () => Promise.resolve(USAGE),
    run: async (args, out) => {
      const [name, extra] = args;
      if (name === undefined) {
        out(USAGE);
        return 0;
      }
      const command = COMMANDS.find((c) => c.name === name);
      if (command === undefined) return unknownCommand(name);
      out(await command.usage(extra)); // `help replay reparse` is `replay reparse --help`
      return 0;
    },
  },
];

const FORMS = COMMANDS.flatMap((c) => [[c.synopsis, c.summary] as const, ...(c.more ?? [])]);
const WIDTH = Math.max(...FORMS.map(([synopsis]) => synopsis.length));
const USAGE = `crawlstream — a polite web crawler built as a stream topology

usage:
${FORMS.map(([synopsis, summary]) => `  crawlstream ${synopsis.padEnd(WIDTH)}  ${summary}`).join('\n')}

Every command takes --help (or -h); its options can also come from a --config file or the
environment (CRAWLSTREAM_<NAME>): flags win over the environment, which wins over the file.`;

function unknownCommand(name: string): number {
  err(`crawlstream: unknown command ${JSON.stringify(name)}\n\n${USAGE}`);
  return 2;
}

/** `--help` or `-h` among the arguments, before a `--` that ends the options. */
function asksForHelp(args: readonly string[]): boolean {
  const end = args.indexOf('--');
  return (end < 0 ? args : args.slice(0, end)).some((a) => a === '--help' || a === '-h');
}

async function main(argv: string[]): Promise<number> {
  const [name, ...args] = argv;
  const out: Out = (line) => process.stdout.write(`${line}\n`);
  if (name === undefined) {
    err(USAGE);
    return 2;
  }
  if (name === '--help' || name === '-h') {
    out(USAGE);
    return 0;
  }
  const command = COMMANDS.find((c) => c.name === name);
  if (command === undefined) return unknownCommand(name);
  if (asksForHelp(args)) {
    out(await command.usage(args[0]));
    return 0;
  }
  try {
    return await command.run(args, out);
  } catch (e) {
    if (!isCrawlError(e) || e.code !== 'CS_INVALID_OPTION') throw e;
    // one line naming what was refused (the message's own usage, if any, is left out), then the usage
    err(`crawlstream ${name}: ${e.message.split('\n')[0]} [${e.code}]\n\n${await command.usage(args[0])}`);
    return 2;
  }
}

// a closed pipe (`| head`) ends the output, not the process with a stack trace
process.stdout.on('error', (e: NodeJS.ErrnoException) => {
  if (e.code === 'EPIPE') process.exit(0);
  throw e;
});

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (e: unknown) => {
    if (isCrawlError(e)) {
      process.stderr.write(`crawlstream: ${e.message} [${e.code}]\n`);
      process.exitCode = 1;
    } else {
      process.stderr.write(`crawlstream: unexpected failure: ${(e as Error).stack ?? String(e)}\n`);
      process.exitCode = 1;
    }
  },
);
