#!/usr/bin/env node
import { isCrawlError } from '../core/errors.js';
import { runCrawl } from './crawl.js';
import { runDemo } from './demo.js';
import { runExport } from './export.js';
import { parseCrawlArgs } from './options.js';
import { CONTROL_USAGE, parseControlArgs, writeControl } from './control.js';
import { produceToKafka } from './kafka-produce.js';
import { TOPICS } from '../processors/common/topics.js';
import { kafkaCommand } from './kafka-commands.js';
import { runReplay } from './replay.js';

const USAGE = `crawlstream — a polite web crawler built as a stream topology

usage:
  crawlstream crawl [URL...] [--seeds FILE] --data DIR [options]   crawl on the embedded engine
  crawlstream export page-records --data DIR                       page records as JSON lines
  crawlstream control block|slow|pause|resume SITE --data DIR     operator control of one site (or --brokers B --registry URL)
  crawlstream demo [--data DIR]                                    crawl the bundled test web, judge politeness
  crawlstream topics create --brokers B [--partitions N]           create every Kafka topic (compacted changelogs)
  crawlstream run --role R --brokers B --registry URL --data DIR   one instance of a role on Kafka (frontier|fetcher|parser|all)
  crawlstream inject --seeds FILE --brokers B --registry URL       seed URLs into the links topic
  crawlstream replay verify --store NAME|all --data DIR            verify local stores against their changelogs (Kafka: --brokers B)
  crawlstream replay rebuild --store NAME|all --data DIR           rebuild stores from their changelogs, swapped in when complete
  crawlstream replay dump --store NAME --data DIR                  print a store's entries, for byte-for-byte comparison
  crawlstream replay reparse --data DIR                            re-derive page records from archived payloads
  crawlstream config [crawl options] [--markdown]                  effective settings and where each came from
  crawlstream dashboard                                            the Grafana dashboard JSON, from the metric catalogue
  crawlstream status [SITE] --ops URL [--json]                     a running crawl's tasks, or one site's queue, back-off and robots.txt

run 'crawlstream crawl --help' for crawl options`;

async function main(argv: string[]): Promise<number> {
  const [command, ...args] = argv;
  const out = (line: string) => process.stdout.write(`${line}\n`);
  const kafka = await kafkaCommand(command, args, out);
  if (kafka !== undefined) return kafka;
  switch (command) {
    case 'crawl':
      if (args.includes('--help')) {
        out((await import('./options.js')).CRAWL_USAGE);
        return 0;
      }
      return (await runCrawl(parseCrawlArgs(args), out)).exitCode;
    case 'export':
      await runExport(args, out);
      return 0;
    case 'config':
      (await import('./config.js')).runConfig(args, out);
      return 0;
    case 'control': {
      if (args.includes('--help')) {
        out(CONTROL_USAGE);
        return 0;
      }
      const { target, command } = parseControlArgs(args);
      const what = `${command.action} ${command.site}${command.minGapMs ? ` (min gap ${command.minGapMs} ms)` : ''}`;
      if ('dataDir' in target) {
        writeControl(target.dataDir, command);
        out(
          `queued ${what}; a running crawl on ${target.dataDir} applies it within seconds, otherwise the next run does`,
        );
      } else {
        await produceToKafka(
          target.brokers,
          target.registryUrl,
          target.partitions,
          TOPICS.control,
          [{ key: command.site, value: command, timestamp: command.issuedAt }],
          target.security,
          target.applicationId,
        );
        out(`sent ${what} to the control topic; the frontier owning ${command.site} applies it within seconds`);
      }
      return 0;
    }
    case 'demo':
      return runDemo(args, out);
    case 'replay':
      return runReplay(args, out);
    case 'status':
      return (await import('./status.js')).runStatus(args, out);
    case 'dashboard':
      return (await import('./dashboard.js')).runDashboard(args, out);
    case undefined:
    case 'help':
    case '--help':
      out(USAGE);
      return command === undefined ? 2 : 0;
    default:
      process.stderr.write(`unknown command ${JSON.stringify(command)}\n${USAGE}\n`);
      return 2;
  }
}

// a closed pipe (`| head`) ends the output, not the process with a stack trace
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE') process.exit(0);
  throw err;
});

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    if (isCrawlError(err)) {
      process.stderr.write(`crawlstream: ${err.message} [${err.code}]\n`);
      process.exitCode = err.code === 'CS_INVALID_OPTION' ? 2 : 1;
    } else {
      process.stderr.write(`crawlstream: unexpected failure: ${(err as Error).stack ?? String(err)}\n`);
      process.exitCode = 1;
    }
  },
);
