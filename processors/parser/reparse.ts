import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Metrics } from '../../core/metrics.js';
import { openRocks, type RocksPort } from '../../state/rocks.js';
import type { ChangeloggedStore, KeyValueStore } from '../../state/state-store.js';
import { buildStores } from '../../runtime/task-state.js';
import type { LinkBatch, PageContent, PageRecord } from '../../schemas/types.js';
import { productToken, type CrawlConfig } from '../common/crawl-config.js';
import {
  DIGESTS_STORE,
  ORIGINALS_STORE,
  PayloadIndex,
  SIMHASH_STORE,
  SiteDuplicates,
  dedupeStores,
  type DigestEntry,
} from './dedupe.js';
import { dedupDigest, derivePage, type DeriveContext } from './derive-page.js';
import { FeedReader } from './feed-reader.js';
import { isNotModified } from './page-archiver.js';
import { PageRecorder, type RecordStamp } from './page-recorder.js';
import { RECORDED_STORE, parserStores } from './parser-processor.js';
import { hasFacts, pageFromWarc, parseWarcFields } from './warc-facts.js';
import { isDefect, parseHttpResponse, readWarcFile, type WarcDefect, type WarcRecord } from './warc-reader.js';

/** Where a reparse's output goes. Called synchronously, in WARC order. */
export interface ReparseSinks {
  /**
   * A re-derived page record; `identity` names the WARC record it was derived from
   * (`<file>@<offset>`), unique and stable across runs. Its links (if any) follow at once.
   */
  pageRecord(identity: string, record: PageRecord, timestamp: number): void;
  /** The content of the page record passed last, when it is an HTML page's (as the parser publishes it). */
  pageContent(content: PageContent, timestamp: number): void;
  /** Outlinks of the page record passed last. */
  links(batch: LinkBatch, timestamp: number): void;
  /** A stretch of a WARC file that was skipped because it is not intact records. */
  defect(defect: WarcDefect): void;
}

/** What a reparse run read. */
export interface ReparseCounts {
  /** Response, revisit and failed-fetch metadata records read (each an archived fetch). */
  fetches: number;
  /** Page records derived (a repeated fetch of a URL and visit, robots.txt and transient outcomes yield none). */
  records: number;
  /** Stretches of WARC files skipped as corrupt. */
  defects: number;
  /** Identical-payload revisits whose first record is in none of the files read. */
  unresolvedCopies: number;
  /** Bytes of WARC files read. */
  bytes: number;
}

/** A response, revisit or failed-fetch metadata record, and the facts of its concurrent metadata record. */
export interface ArchivedFetch {
  record: WarcRecord;
  facts: Map<string, string>;
  /** Its WARC-Date, epoch ms. */
  fetchedAt: number;
}

function archivedFetch(record: WarcRecord, facts: Map<string, string>): ArchivedFetch {
  return { record, facts, fetchedAt: Date.parse(record.fields.get('warc-date') ?? '') || 0 };
}

/**
 * Scratch store writes go to RocksDB after this many fetches, as a live task's go at each commit:
 * pending writes are held in RAM (and were scanned by every range read before the stores kept
 * them sorted).
 */
const CHECKPOINT_EVERY = 64;

/**
 * Re-derives page records (with their content and outlinks) from archived fetches — the response, revisit and
 * failed-fetch metadata records of WARC files, with the fetch facts the archiver writes next to
 * them (warc-facts.ts) — through the live parser's own code: `derivePage` (what the payload-keyed
 * half does) and a `PageRecorder` (what the site-keyed half does: exact and near duplicates, one
 * record per URL and visit). Their state lives in a scratch RocksDB of its own, deleted by
 * `close()`; the crawl's stores are never read or written.
 *
 * Files are read in the order given (give each partition's files in name order: a payload's
 * first record then comes before its copies). A revisit whose first record was not read yet is
 * held back to the end of the run and resolved then; one whose first record is in none of the
 * files takes the revisit's own WARC-Refers-To fields, with no SimHash or charset.
 */
export class Reparser {
  private readonly ctx: DeriveContext;
  private readonly payloads: PayloadIndex;
  private readonly recorder: PageRecorder;
  private readonly held: ArchivedFetch[] = [];
  private sinceCheckpoint = 0;
  private identity = '';
  readonly counts: ReparseCounts = { fetches: 0, records: 0, defects: 0, unresolvedCopies: 0, bytes: 0 };

  private constructor(
    config: CrawlConfig,
    metrics: Metrics,
    stamp: RecordStamp,
    private readonly sinks: ReparseSinks,
    private readonly scratch: { db: RocksPort; dir: string; stores: Map<string, KeyValueStore<unknown, unknown>> },
  ) {
    this.ctx = { config, robotsToken: productToken(config.userAgent), feeds: new FeedReader(config, metrics), metrics };
    const store = <K, V>(name: string) => scratch.stores.get(name) as KeyValueStore<K, V>;
    this.payloads = new PayloadIndex(store(DIGESTS_STORE));
    this.recorder = new PageRecorder(
      store(RECORDED_STORE),
      new SiteDuplicates(store(SIMHASH_STORE), store(ORIGINALS_STORE)),
      metrics,
      {
        pageRecord: (record, timestamp) => {
          this.counts.records++;
          sinks.pageRecord(this.identity, record, timestamp);
        },
        pageContent: (content, timestamp) => sinks.pageContent(content, timestamp),
        links: (batch, timestamp) => sinks.links(batch, timestamp),
        // an exact copy resolved at its original's site goes on to its own site's half: here, at once
        parsedPage: (key, page, timestamp) => this.recorder.record(key, page, timestamp),
      },
      stamp,
    );
  }

  /** A reparser with fresh scratch stores under `scratchParent` (default: the OS temp dir). */
  static async open(
    config: CrawlConfig,
    metrics: Metrics,
    stamp: RecordStamp,
    sinks: ReparseSinks,
    scratchParent = tmpdir(),
  ): Promise<Reparser> {
    const dir = mkdtempSync(join(scratchParent, 'crawlstream-reparse-'));
    const db = await openRocks(dir);
    const wanted = new Set([RECORDED_STORE, ...dedupeStores().map((b) => b.name)]);
    const builders = parserStores(config, dir).filter((b) => wanted.has(b.name));
    // scratch stores: no changelog is named, so none is listed as changelogged
    const { stores } = buildStores({ subtopology: 0, partition: 0 }, builders, { db, storeDir: () => dir });
    return new Reparser(config, metrics, stamp, sinks, {
      db,
      dir,
      stores: stores as Map<string, KeyValueStore<unknown, unknown>>,
    });
  }

  /**
   * The archived fetches of `paths`, merged in fetch-time order (WARC-Date; file order on ties), as
   * the live parser met them: a payload's first record before its copies, a site's pages in the
   * order its near duplicates were judged. Corrupt stretches go to `sinks.defect` and are counted.
   */
  *fetches(paths: readonly string[]): Generator<ArchivedFetch> {
    type Head = { next: ArchivedFetch; rest: Generator<ArchivedFetch>; file: number };
    const before = (a: Head, b: Head) =>
      a.next.fetchedAt < b.next.fetchedAt || (a.next.fetchedAt === b.next.fetchedAt && a.file < b.file);
    const heap = new MinHeap(before);
    paths.forEach((path, file) => {
      const rest = this.fetchesOfFile(path);
      const first = rest.next();
      if (!first.done) heap.push({ next: first.value, rest, file });
    });
    for (let head = heap.pop(); head !== undefined; head = heap.pop()) {
      yield head.next;
      const next = head.rest.next();
      if (!next.done) heap.push({ ...head, next: next.value });
    }
  }

  /** Derives the page record of one archived fetch, if it yields one, and hands it to the sinks. */
  derive(fetch: ArchivedFetch): void {
    this.deriveFetch(fetch, false);
    if (++this.sinceCheckpoint >= CHECKPOINT_EVERY) this.checkpoint();
  }

  /** One file's archived fetches in file order: each response or revisit with the facts of its metadata record. */
  private *fetchesOfFile(path: string): Generator<ArchivedFetch> {
    let pending: ArchivedFetch | undefined;
    for (const r of readWarcFile(path)) {
      if (isDefect(r)) {
        this.counts.defects++;
        this.counts.bytes += r.skipped;
        this.sinks.defect(r);
        continue;
      }
      this.counts.bytes += r.length;
      if (r.type === 'request') continue;
      if (r.type === 'metadata') {
        const fields = parseWarcFields(r.block);
        if (
          pending !== undefined &&
          r.fields.get('warc-concurrent-to') === pending.record.fields.get('warc-record-id')
        ) {
          pending.facts = fields;
          continue;
        }
        if (pending !== undefined) yield pending;
        pending = undefined;
        // a fetch that got no response: only with facts, which say whether the crawler retried it
        if (!r.fields.has('warc-concurrent-to') && fields.has('fetch-error-code') && hasFacts(fields))
          yield archivedFetch(r, fields);
        continue;
      }
      if (pending !== undefined) yield pending;
      pending = r.type === 'response' || r.type === 'revisit' ? archivedFetch(r, new Map()) : undefined;
    }
    if (pending !== undefined) yield pending;
  }

  /** Resolves the revisits held back for their first record; call once, after the last file. */
  finish(): void {
    for (const fetch of this.held.splice(0)) this.deriveFetch(fetch, true);
    this.checkpoint();
  }

  /** Deletes the scratch stores. */
  async close(): Promise<void> {
    await this.scratch.db.close();
    rmSync(this.scratch.dir, { recursive: true, force: true });
  }

  private deriveFetch(fetch: ArchivedFetch, last: boolean): void {
    const { record, facts, fetchedAt } = fetch;
    const url = record.fields.get('warc-target-uri') ?? '';
    const warcDigest = record.fields.get('warc-payload-digest') ?? null;
    const http = record.type === 'metadata' ? undefined : parseHttpResponse(record.block);
    if (record.type !== 'metadata' && http === undefined) {
      this.counts.defects++;
      this.sinks.defect({
        file: record.file,
        offset: record.offset,
        skipped: 0,
        reason: 'no HTTP response in the block',
      });
      return;
    }
    const page = pageFromWarc(url, fetchedAt, http, facts);
    const profile = record.fields.get('warc-profile') ?? '';
    let first: DigestEntry | undefined;
    let contentLength: number | undefined;
    if (record.type === 'revisit' && profile.endsWith('/identical-payload-digest')) {
      first = warcDigest !== null ? this.payloads.firstRecord(warcDigest) : undefined;
      if (first === undefined && !last) {
        this.held.push(fetch);
        return;
      }
      if (first === undefined) {
        this.counts.unresolvedCopies++;
        first = {
          url: record.fields.get('warc-refers-to-target-uri') ?? url,
          fetchedAt: Date.parse(record.fields.get('warc-refers-to-date') ?? ''),
          recordId: record.fields.get('warc-refers-to') ?? '',
          duplicateOf: null,
          simhash: null,
        };
      }
      contentLength = first.contentLength ?? originalContentLength(page.headers);
    }
    this.counts.fetches++;
    page.payloadDigest = warcDigest;
    const notModified = record.type === 'revisit' && isNotModified(page);
    const derived = derivePage(
      {
        page,
        location: {
          file: record.file,
          offset: record.offset,
          length: record.length,
          recordId: record.fields.get('warc-record-id') ?? '',
        },
        payloadDigest: warcDigest,
        dedupDigest: first === undefined && !notModified ? dedupDigest(page) : warcDigest,
        first,
        notModified,
        ...(contentLength !== undefined ? { contentLength } : {}),
      },
      this.ctx,
    );
    if (derived === undefined) return;
    if (derived.firstEntry !== undefined)
      this.payloads.recordFirst(derived.parsed.payloadDigest!, {
        ...derived.firstEntry,
        contentLength: page.body.length,
      });
    this.identity = `${record.file}@${record.offset}`;
    this.recorder.record(derived.key, derived.parsed, fetchedAt);
  }

  /** Moves the scratch stores' pending writes to disk. */
  private checkpoint(): void {
    this.sinceCheckpoint = 0;
    for (const s of this.scratch.stores.values()) (s as unknown as ChangeloggedStore).applyCommitted(0);
  }
}

/** The body length the server announced, for a copy whose first record was not read. */
function originalContentLength(headers: { name: string; value: string }[]): number {
  const v = headers.findLast((h) => h.name.toLowerCase() === 'content-length')?.value;
  return v !== undefined && /^\d+$/.test(v.trim()) ? Number(v.trim()) : 0;
}

/** A binary min-heap under `before`. */
class MinHeap<T> {
  private readonly items: T[] = [];
  constructor(private readonly before: (a: T, b: T) => boolean) {}

  push(item: T): void {
    const a = this.items;
    a.push(item);
    for (let i = a.length - 1; i > 0;) {
      const parent = (i - 1) >> 1;
      if (!this.before(a[i]!, a[parent]!)) break;
      [a[i], a[parent]] = [a[parent]!, a[i]!];
      i = parent;
    }
  }

  pop(): T | undefined {
    const a = this.items;
    const top = a[0];
    const last = a.pop();
    if (a.length > 0 && last !== undefined) {
      a[0] = last;
      for (let i = 0; ;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < a.length && this.before(a[l]!, a[m]!)) m = l;
        if (r < a.length && this.before(a[r]!, a[m]!)) m = r;
        if (m === i) break;
        [a[i], a[m]] = [a[m]!, a[i]!];
        i = m;
      }
    }
    return top;
  }
}
