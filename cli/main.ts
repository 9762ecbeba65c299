#!/usr/bin/env node
import { isCrawlError } from '../runtime/errors.js';
import { runCrawl } from './crawl.js';
import { runDemo } from './demo.js';
import { runExport } from './export.js';
import { parseCrawlArgs } from './options.js';

const USAGE = `crawlstream — a polite web crawler built as a stream topology

usage:
  crawlstream crawl [URL...] [--seeds FILE] --data DIR [options]   crawl on the embedded engine
  crawlstream export page-records --data DIR                       page records as JSON lines
  crawlstream demo [--data DIR]                                    crawl the bundled test web, judge politeness

run 'crawlstream crawl --help' for crawl options`;

async function main(argv: string[]): Promise<number> {
  const [command, ...args] = argv;
  const out = (line: string) => process.stdout.write(`${line}\n`);
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
    case 'demo':
      return runDemo(args, out);
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
