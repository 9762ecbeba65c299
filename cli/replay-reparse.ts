import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { InvalidOptionError } from '../core/errors.js';
import { Metrics } from '../core/metrics.js';
import type { LinkBatch, PageContent, PageRecord } from '../schemas/types.js';
import { PARSER_VERSION } from '../processors/parser/parser-version.js';
import { Reparser } from '../processors/parser/reparse.js';
import { crawlTopology, TOPICS } from '../topology/crawl-topology.js';
import { parseCrawlArgs } from './options.js';
import { embeddedOutput, kafkaOutput, type OutputRecord, type ReparseOutput } from './reparse-output.js';
import { kafkaEndpoints, kafkaSelected } from './run-options.js';
import { securityFromSettings } from './kafka-security-options.js';
import { kafkaAppIdOf } from './app-id.js';
import { resolveSettings } from './config-sources.js';
import { commandUsage } from './usage.js';
import type { ClusterSecurity } from '../runtime/engines/kafka/kafka-security.js';

export const REPARSE_USAGE = commandUsage(
  'reparse',
  [
    '--data DIR [--warc DIR|FILE ...] [--emit-links]',
    '                              [--brokers HOST:PORT[,..] --registry URL [--app-id ID]] [--config FILE] [--partitions N]',
  ],
  `  re-derives page records from the archived payloads of the crawl's WARC files (default
  DIR/warc) through the current parser, fetching nothing, and appends them to 'page-records'
  (parserVersion = the current parser's, reparsed = true), with each HTML page's content to
  'page-content': in the embedded data dir, or with --brokers on Kafka, in transactions. Idempotent: records already re-derived under this parser
  version are skipped ("N re-derived, M already present"). --emit-links also sends their
  outlinks to 'links' (the frontier then admits them); without it the frontier is untouched.
  Use the crawl's own --config: derivation depends on settings such as the user agent.
  Exits 1 when a WARC record was corrupt (reported with file and offset, skipped). A --brokers
  or --registry from the environment or a --config file (not a flag) is passed over when DIR
  holds an embedded crawl (DIR/log).`,
);

/** What a reparse run is asked to do; `runReparse` builds it from the command line. */
export interface ReparseRequest {
  dataDir: string;
  /** WARC files in reading order. */
  warcFiles: string[];
  emitLinks: boolean;
  /** The crawl options the parser's derivation depends on (user agent, caps, sitemaps), as for `crawl`. */
  crawlArgs: string[];
  /** Kafka instead of the embedded data dir; `applicationId` is the crawl's `--app-id`. */
  kafka?: {
    brokers: string[];
    registryUrl: string;
    security: ClusterSecurity;
    applicationId: string;
  };
  /** Default PARSER_VERSION; a test stands in for a changed parser with another number. */
  parserVersion?: number;
  /** Page records (with their links) per atomic write. Default 500. */
  batchRecords?: number;
}

/** What a reparse run did. */
export interface ReparseResult {
  derived: number;
  alreadyPresent: number;
  /** page-content records written: one per re-derived page record of an HTML page. */
  contents: number;
  links: number;
  defects: number;
  fetches: number;
  bytes: number;
  elapsedMs: number;
}

/** `crawlstream replay reparse`: see REPARSE_USAGE. Returns the exit code. */
export async function runReparse(
  args: string[],
  out: (line: string) => void,
  env: NodeJS.ProcessEnv = process.env,
): Promise<number> {
  const resolved = resolveSettings(args, env, REPARSE_USAGE, 'reparse');
  const v = resolved.values;
  const str = (name: string): string | undefined => v.get(name)?.value as string | undefined;
  if (resolved.positionals.length > 0)
    throw new InvalidOptionError(`replay reparse takes no argument ${JSON.stringify(resolved.positionals[0])}`);
  const data = str('data');
  if (!data) throw new InvalidOptionError(`--data DIR is required\n${REPARSE_USAGE}`);
  let kafka: ReparseRequest['kafka'];
  const onKafka = kafkaSelected(v, ['brokers', 'registry'], data);
  const applicationId = kafkaAppIdOf(v.get('app-id'), onKafka, 'replay reparse');
  if (onKafka) {
    const { brokers, registryUrl } = kafkaEndpoints(str('brokers'), str('registry'), REPARSE_USAGE);
    if (!registryUrl) throw new InvalidOptionError(`--registry URL is required with --brokers\n${REPARSE_USAGE}`);
    kafka = { brokers, registryUrl, security: securityFromSettings(resolved, env), applicationId };
  } else if (!existsSync(join(data, 'log'))) {
    throw new InvalidOptionError(
      `--data ${data} holds no embedded crawl (no ${join(data, 'log')}); give --brokers for Kafka`,
    );
  }
  const config = v.get('config');
  const result = await reparse(
    {
      dataDir: data,
      warcFiles: warcFilesOf((v.get('warc')?.value as string[] | undefined) ?? [join(data, 'warc')]),
      emitLinks: v.get('emit-links')?.value === true,
      // the crawl's own settings: reparse() resolves them as crawl does (its environment included)
      crawlArgs: [
        ...(config !== undefined && config.source.startsWith('flag') ? ['--config', config.value as string] : []),
        '--partitions',
        String(v.get('partitions')!.value),
      ],
      ...(kafka ? { kafka } : {}),
    },
    out,
  );
  return result.defects > 0 ? 1 : 0;
}

/**
 * The WARC files of `--warc` inputs in reading order: a directory's `*.warc.gz` by name (the
 * creation time leads the name, so files are read in about the order they were written; files
 * still `.open` are left out), a file as given. A missing input is an error (CS_INVALID_OPTION).
 */
export function warcFilesOf(inputs: readonly string[]): string[] {
  const files: string[] = [];
  for (const input of inputs) {
    if (!existsSync(input)) throw new InvalidOptionError(`--warc ${input} does not exist`);
    if (statSync(input).isDirectory()) {
      const names = readdirSync(input)
        .filter((n) => n.endsWith('.warc.gz'))
        .sort();
      if (names.length === 0) throw new InvalidOptionError(`--warc ${input} holds no .warc.gz files`);
      files.push(...names.map((n) => join(input, n)));
    } else {
      files.push(input);
    }
  }
  return files;
}

/** Runs a reparse; prints progress at most every PROGRESS_MS, corrupt records and a summary to `out`. */
export async function reparse(req: ReparseRequest, out: (line: string) => void): Promise<ReparseResult> {
  const started = Date.now();
  const parserVersion = req.parserVersion ?? PARSER_VERSION;
  const batchRecords = req.batchRecords ?? 500;
  const crawl = parseCrawlArgs(['--data', req.dataDir, ...req.crawlArgs]);
  const topology = crawlTopology({
    config: crawl.config,
    partitions: crawl.partitions,
    warcDir: join(req.dataDir, 'warc'),
    ...(req.kafka ? { applicationId: req.kafka.applicationId } : {}),
  });
  topology.build();
  const output: ReparseOutput = req.kafka
    ? await kafkaOutput(req.kafka.brokers, req.kafka.registryUrl, topology, req.kafka.security)
    : await embeddedOutput(req.dataDir, topology);
  const result: ReparseResult = {
    derived: 0,
    alreadyPresent: 0,
    contents: 0,
    links: 0,
    defects: 0,
    fetches: 0,
    bytes: 0,
    elapsedMs: 0,
  };
  let reparser: Reparser | undefined;
  try {
    const present = await output.present(parserVersion);
    // page records with their links, grouped per page so a write never splits a page from its links
    let pages: OutputRecord[][] = [];
    let skipping = false;
    let lastProgress = started;
    let lastFetches = 0;
    reparser = await Reparser.open(
      crawl.config,
      new Metrics(),
      { parserVersion, reparsed: true },
      {
        pageRecord: (identity: string, record: PageRecord, timestamp: number) => {
          skipping = present.has(identity);
          if (skipping) result.alreadyPresent++;
          else pages.push([{ topic: TOPICS.pageRecords, key: record.site, value: record, timestamp }]);
          const now = Date.now();
          if (now - lastProgress >= PROGRESS_MS) {
            const c = reparser!.counts;
            out(
              `reparse: ${c.fetches} fetches read (${Math.round(((c.fetches - lastFetches) * 1000) / (now - lastProgress))}/s), ${result.derived + pages.length} re-derived, ${result.alreadyPresent} already present`,
            );
            lastProgress = now;
            lastFetches = c.fetches;
          }
        },
        // with its page record in the same atomic write, as the parser's transaction has them
        pageContent: (content: PageContent, timestamp: number) => {
          if (skipping) return;
          pages[pages.length - 1]!.push({ topic: TOPICS.pageContent, key: content.site, value: content, timestamp });
          result.contents++;
        },
        links: (batch: LinkBatch, timestamp: number) => {
          if (skipping || !req.emitLinks) return;
          pages[pages.length - 1]!.push({ topic: TOPICS.links, key: batch.site, value: batch, timestamp });
          result.links += batch.links.length;
        },
        defect: (d) =>
          out(`corrupt WARC input: ${d.file} at offset ${d.offset}: ${d.reason}; ${d.skipped} bytes skipped`),
      },
    );
    const flush = async () => {
      for (let i = 0; i < pages.length; i += batchRecords) await output.write(pages.slice(i, i + batchRecords).flat());
      result.derived += pages.length;
      pages = [];
    };
    for (const fetch of reparser.fetches(req.warcFiles)) {
      reparser.derive(fetch);
      if (pages.length >= batchRecords) await flush();
    }
    reparser.finish();
    await flush();
    Object.assign(result, {
      defects: reparser.counts.defects,
      fetches: reparser.counts.fetches,
      bytes: reparser.counts.bytes,
      elapsedMs: Date.now() - started,
    });
    const unresolved = reparser.counts.unresolvedCopies;
    out(
      `${result.derived} re-derived, ${result.alreadyPresent} already present, ${result.contents} page contents (parser version ${parserVersion}; ${result.fetches} archived fetches in ${req.warcFiles.length} WARC files, ${(result.bytes / 1e6).toFixed(1)} MB, ${(result.elapsedMs / 1000).toFixed(1)} s)` +
        (req.emitLinks ? `; ${result.links} links sent to ${TOPICS.links}` : '') +
        (unresolved > 0 ? `; ${unresolved} copies whose first record is in none of the files` : '') +
        (result.defects > 0 ? `; ${result.defects} corrupt WARC records skipped` : ''),
    );
    return result;
  } finally {
    await reparser?.close();
    await output.close();
  }
}

/** Progress lines at most this often. */
const PROGRESS_MS = 2_000;
