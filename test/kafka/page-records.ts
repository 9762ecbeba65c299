import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { FetchedPage } from '../../schemas/types.js';
import { fetchedPageFor } from '../processors/parser/fetched-page.js';
import type { SiteSpec } from '../../synthetic-web/sites.js';
import { TOPICS } from '../../topology/crawl-topology.js';
import { python } from '../python/python.js';
import { sleep, startCli } from '../e2e/harness.js';

const READER = fileURLToPath(new URL('../../../test/python/read_page_records.py', import.meta.url));
const run = promisify(execFile);

/**
 * The URLs in `page-records` whose host is `host`, in log order, repeats kept: read committed by
 * a consumer we did not write (confluent-kafka + fastavro through the registry).
 */
export async function recordedUrls(brokers: string, registry: string, host: string): Promise<string[]> {
  return (await pageRecordsOf(brokers, registry)).map((r) => r.url).filter((u) => new URL(u).hostname === host);
}

/** What the independent reader prints of one page record. */
export interface ReadPageRecord {
  partition: number;
  offset: number;
  url: string;
  status: number;
  warcFile: string | null;
  warcOffset: number | null;
  parserVersion: number;
  reparsed: boolean;
  /** When the page was fetched (ms since the epoch), and its visit number: they tell two records of one URL apart. */
  fetchTime: number;
  visit: number | null;
  /** The WARC file's object with --warc-store (null without it, or in records older than the field), and the record's length. */
  warcUri: string | null;
  warcLength: number | null;
  errorCode: string | null;
  duplicateOf: string | null;
  notModified: boolean;
}

/**
 * Every committed record of `page-records`, in log order per partition, read as `recordedUrls`
 * reads them; `topic` is the cluster name (`<app-id>.page-records` for a crawl with another `--app-id`).
 */
export async function pageRecordsOf(
  brokers: string,
  registry: string,
  topic: string = TOPICS.pageRecords,
): Promise<ReadPageRecord[]> {
  const { stdout } = await run(python(), [READER, brokers, registry, topic], {
    encoding: 'utf8',
    timeout: 120_000,
    maxBuffer: 64 * 2 ** 20,
  });
  return stdout
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as ReadPageRecord);
}

/**
 * A fetch as the fetcher forwards it to the parser: a 404 with a short text body by default (no
 * duplicate detection, so it is keyed by its site, the host), `body` replaced when given.
 */
export function fetchedPageOf(url: string, body: Buffer = Buffer.from('not here\n')): FetchedPage {
  return fetchedPageFor(url, {
    leaseId: `l-${randomUUID()}`,
    status: 404,
    headers: [{ name: 'Content-Type', value: 'text/plain' }],
    body,
    payloadDigest: null,
  });
}

/** How a crawl on Kafka reaches the synthetic web: every `.test` host on loopback, no other address, no system DNS. */
export const LOOPBACK_WEB_ARGS: readonly string[] = [
  '--resolve',
  '*.test=127.0.0.1',
  '--allow-ip',
  '127.0.0.1/32',
  '--no-system-dns',
];

/**
 * The arguments of `crawlstream run` for `role` on the test broker, its data under `dataDir`, then
 * `extra`; `--app-id appId` when given (default: none, the default application id).
 */
export function runArgs(
  role: string,
  dataDir: string,
  brokers: string,
  registry: string,
  extra: readonly string[] = [],
  appId?: string,
): string[] {
  return [
    'run',
    '--role',
    role,
    '--data',
    dataDir,
    '--brokers',
    brokers,
    '--registry',
    registry,
    '--metrics-port',
    '0',
    ...(appId !== undefined ? ['--app-id', appId] : []),
    ...extra,
  ];
}

/** A seed site of three linked pages, '/', '/a.html' and '/b.html', each titled `<title> <page>`. */
export function threePageSite(host: string, title: string): SiteSpec {
  return {
    host,
    seed: true,
    pages: {
      '/': { title: `${title} home`, links: ['/a.html', '/b.html'] },
      '/a.html': { title: `${title} A`, links: ['/b.html'] },
      '/b.html': { title: `${title} B`, links: ['/'] },
    },
  };
}

/** The arguments of `crawlstream inject` of the seeds in `seeds` on the test broker; `--app-id appId` when given. */
export function injectArgs(seeds: string, brokers: string, registry: string, appId?: string): string[] {
  return [
    'inject',
    '--seeds',
    seeds,
    '--brokers',
    brokers,
    '--registry',
    registry,
    ...(appId !== undefined ? ['--app-id', appId] : []),
  ];
}

/**
 * Runs `crawlstream run --role all` for application `appId` on `dataDir` until `${appId}.page-records`
 * holds `paths` (pathnames, sorted) or 90 s pass, then stops it with SIGTERM; fails unless it exits
 * 0 having recorded exactly `paths`. Returns its stderr. The instance is killed on any failure.
 */
export async function crawlAppUntilRecorded(
  brokers: string,
  registry: string,
  dataDir: string,
  appId: string,
  paths: readonly string[],
): Promise<string> {
  const instance = startCli(
    runArgs('all', dataDir, brokers, registry, [...LOOPBACK_WEB_ARGS, '--quiet', '--fetch-timeout', '3000'], appId),
  );
  let stderr = '';
  instance.child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  try {
    const recorded = async () =>
      (await pageRecordsOf(brokers, registry, `${appId}.page-records`)).map((r) => new URL(r.url).pathname).sort();
    const until = Date.now() + 90_000;
    let pages = await recorded();
    while (Date.now() < until && instance.child.exitCode === null && pages.length < paths.length) {
      await sleep(1_000);
      pages = await recorded();
    }
    instance.child.kill('SIGTERM');
    assert.equal((await instance.exited).code, 0, stderr.slice(-4000));
    assert.deepEqual(await recorded(), paths, `${appId} did not record every page:\n${stderr.slice(-4000)}`);
    return stderr;
  } finally {
    instance.child.kill('SIGKILL');
  }
}
