import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SyntheticWeb } from '../synthetic-web/synthetic-web.js';
import { checkPoliteness, formatPolitenessReport } from '../synthetic-web/politeness.js';
import { productToken } from '../processors/common/crawl-config.js';
import { runCrawl } from './crawl.js';
import { parseCrawlArgs } from './options.js';
import { resolveSettings } from './config-sources.js';
import { InvalidOptionError } from '../core/errors.js';
import { commandUsage } from './usage.js';

export const DEMO_USAGE = commandUsage(
  'demo',
  ['[--data DIR] [--quiet]'],
  `  starts the bundled synthetic web on 127.0.0.1, crawls it to idle on the embedded engine and
  judges politeness from the web server's own request log; exits 0 only if every request was
  polite. Without --data, the crawl's data goes to a new temporary directory.`,
);

/**
 * Starts the bundled synthetic web on loopback, crawls it to idle on the embedded engine and
 * judges politeness from the web server's own request log. Exit code 0 only if it was polite.
 */
export async function runDemo(
  args: string[],
  out: (line: string) => void,
  env: NodeJS.ProcessEnv = process.env,
): Promise<number> {
  const { values, positionals } = resolveSettings(args, env, DEMO_USAGE, 'demo');
  if (positionals.length > 0) throw new InvalidOptionError(`demo takes no argument ${JSON.stringify(positionals[0])}`);
  const quiet = values.get('quiet')?.value === true;
  const dataDir = (values.get('data')?.value as string | undefined) ?? mkdtempSync(join(tmpdir(), 'crawlstream-demo-'));
  const web = await SyntheticWeb.start({ logFile: join(dataDir, 'web-requests.jsonl') });
  out(`synthetic web: ${web.sites.length} sites on 127.0.0.1:${web.port}; data in ${dataDir}`);
  try {
    const cmd = parseCrawlArgs(
      [
        ...web.seedUrls(),
        '--data',
        dataDir,
        '--resolve',
        '*.test=127.0.0.1',
        '--allow-ip',
        '127.0.0.1/32',
        '--no-system-dns',
        '--until-idle',
        '--fetch-timeout',
        '10000',
        ...(quiet ? ['--quiet'] : []),
      ],
      env,
    );
    const run = await runCrawl(cmd, out);
    const report = checkPoliteness(web.requests(), web.sites, { userAgent: productToken(cmd.config.userAgent) });
    out(formatPolitenessReport(report));
    out(`WARC files in ${join(dataDir, 'warc')}; page records: crawlstream export page-records --data ${dataDir}`);
    return run.exitCode !== 0 ? run.exitCode : report.violations.length === 0 ? 0 : 1;
  } finally {
    await web.close();
  }
}
