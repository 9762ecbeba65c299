import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Metrics } from '../../../runtime/metrics.js';
import type { ProcessorContext } from '../../../runtime/processor.js';
import type { StateStore } from '../../../state/state-store.js';
import { bufferCodec, stringCodec } from '../../../state/state-store.js';
import { openRocks, type RocksPort } from '../../../state/rocks.js';
import { RocksKeyValueStore } from '../../../state/rocks-store.js';
import { defaultCrawlConfig } from '../../../processors/crawl-config.js';
import { DIGESTS_STORE, SIMHASH_STORE, digestEntryCodec } from '../../../processors/parser/dedupe.js';
import { PAGE_RECORDS_SINK, ParserProcessor, RECORDED_STORE } from '../../../processors/parser/parser-processor.js';
import { WARC_STORE, WarcStore } from '../../../processors/parser/warc-store.js';
import { WarcWriter } from '../../../processors/parser/warc-writer.js';
import type { FetchedPage, LinkBatch, PageRecord } from '../../../schemas/types.js';
import { prose } from '../../web/sites.js';
import { assertWarcioCheckPasses, warcioIndex } from './warcio.js';

/** One parser task on a real RocksDB and a real WARC writer; `commit()` applies pending store writes. */
function parserTask(db: RocksPort, warcDir: string) {
  const stores = new Map<string, StateStore>([
    [RECORDED_STORE, new RocksKeyValueStore(RECORDED_STORE, db, bufferCodec, bufferCodec)],
    [DIGESTS_STORE, new RocksKeyValueStore(DIGESTS_STORE, db, stringCodec, digestEntryCodec)],
    [SIMHASH_STORE, new RocksKeyValueStore(SIMHASH_STORE, db, bufferCodec, bufferCodec)],
  ]);
  const writer = new WarcWriter({ dir: warcDir, partition: 0 });
  writer.open();
  stores.set(WARC_STORE, new WarcStore(writer));
  const records: PageRecord[] = [];
  const links: LinkBatch[] = [];
  const context: ProcessorContext<string, PageRecord | LinkBatch> = {
    applicationId: 'test', taskId: { subtopology: 2, partition: 0 }, metrics: new Metrics(), recordMetadata: undefined,
    forward: (r, child) => (child === PAGE_RECORDS_SINK ? records.push(r.value as PageRecord) : links.push(r.value as LinkBatch)),
    schedule: () => ({ cancel() {} }),
    getStateStore: <S extends StateStore>(name: string) => stores.get(name) as S,
    commit: () => {},
    currentTimeMs: () => Date.now(),
  };
  const parser = new ParserProcessor(defaultCrawlConfig);
  parser.init(context);
  let offset = 0;
  return {
    parser, records, links,
    process: (page: FetchedPage) => parser.process({ key: page.site, value: page, timestamp: page.fetchedAt }),
    commit: () => {
      for (const [name, s] of stores) if (name !== WARC_STORE) (s as RocksKeyValueStore<unknown, unknown>).applyCommitted(++offset);
      writer.flush();
    },
    close: () => writer.close(),
  };
}

let clock = Date.parse('2026-05-01T12:00:00Z');
function fetched(url: string, html: string): FetchedPage {
  const u = new URL(url);
  return {
    leaseId: `l-${clock}`, url, host: u.hostname, site: u.hostname.split('.').slice(-2).join('.'), depth: 1, redirectHops: 0, attempt: 1,
    fetchedAt: clock += 1_000, durationMs: 20, status: 200, httpVersion: '1.1',
    requestHead: `GET ${u.pathname} HTTP/1.1\r\nHost: ${u.host}\r\n\r\n`,
    headers: [{ name: 'Content-Type', value: 'text/html; charset=utf-8' }], body: Buffer.from(html, 'utf8'),
    truncated: false, remoteAddress: '127.0.0.1', errorCode: null, errorMessage: null, redirectTarget: null, kind: 'PAGE',
  };
}

const article = (edition: number) =>
  `<html><head><title>Harbour</title></head><body><p>Updated 2026-05-0${edition}T10:0${edition}:00Z, edition ${edition}</p><p>${prose('harbour', 300)}</p><a href="/more.html">more</a></body></html>`;
const distinct = (seed: string) => `<html><body><p>${prose(seed, 150)}</p><a href="/${seed}.html">next</a></body></html>`;

async function withTask(fn: (db: RocksPort, warcDir: string) => Promise<void> | void): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'crawlstream-dedupe-'));
  const db = await openRocks(path.join(dir, 'db'));
  try {
    await fn(db, path.join(dir, 'warc'));
  } finally {
    await db.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

test('exact copies become revisits and near copies aliases, links unfollowed, and both survive a restart', () =>
  withTask((db, warcDir) => {
    let task = parserTask(db, warcDir);
    task.process(fetched('http://www.site.test/a.html', distinct('alpha')));
    task.process(fetched('http://mirror.site.test/a.html', distinct('alpha')));
    task.process(fetched('http://www.site.test/story.html', article(1)));
    task.process(fetched('http://www.site.test/print/story.html', article(2)));
    task.process(fetched('http://www.site.test/b.html', distinct('beta')));
    task.commit();
    task.close();
    const records = [...task.records];
    const linkSources = task.links.map((l) => l.sourceUrl);

    // a restarted task: same RocksDB, the digests and the SimHash index are read back from it
    task = parserTask(db, warcDir);
    task.process(fetched('http://www.site.test/copy-of-a.html', distinct('alpha')));
    task.process(fetched('http://www.site.test/story.html?amp=1', article(3)));
    task.process(fetched('http://www.site.test/c.html', distinct('gamma')));
    task.commit();
    task.close();
    records.push(...task.records);
    linkSources.push(...task.links.map((l) => l.sourceUrl));

    const dupOf = Object.fromEntries(records.map((r) => [r.url.replace('http://', ''), r.duplicateOf?.replace('http://', '') ?? null]));
    assert.deepEqual(dupOf, {
      'www.site.test/a.html': null,
      'mirror.site.test/a.html': 'www.site.test/a.html',
      'www.site.test/story.html': null,
      'www.site.test/print/story.html': 'www.site.test/story.html',
      'www.site.test/b.html': null,
      'www.site.test/copy-of-a.html': 'www.site.test/a.html',
      'www.site.test/story.html?amp=1': 'www.site.test/story.html',
      'www.site.test/c.html': null,
    });
    const copies = records.filter((r) => r.duplicateOf !== null);
    for (const r of copies) assert.equal(r.outlinkCount, 0, `links of ${r.url} were followed`);
    assert.deepEqual(linkSources.sort(), ['a.html', 'b.html', 'c.html', 'story.html'].map((p) => `http://www.site.test/${p}`).sort());
    for (const r of records) assert.equal(r.simhash?.length, 8, `${r.url} has a SimHash`);
    assert.deepEqual(records[1]!.simhash, records[0]!.simhash, 'an exact copy carries the SimHash of its original');

    // in the WARC files: revisits for the exact copies, responses for everything else
    const files = fs.readdirSync(warcDir).filter((f) => f.endsWith('.warc.gz')).sort();
    assert.equal(files.length, 2);
    const index = files.flatMap((f) => {
      assertWarcioCheckPasses(path.join(warcDir, f));
      return warcioIndex(path.join(warcDir, f), ['warc-type', 'warc-target-uri', 'warc-record-id', 'warc-refers-to-target-uri', 'warc-refers-to', 'warc-profile']);
    });
    const revisits = index.filter((r) => r['warc-type'] === 'revisit');
    assert.deepEqual(revisits.map((r) => [r['warc-target-uri'], r['warc-refers-to-target-uri']]), [
      ['http://mirror.site.test/a.html', 'http://www.site.test/a.html'],
      ['http://www.site.test/copy-of-a.html', 'http://www.site.test/a.html'],
    ]);
    const original = index.find((r) => r['warc-type'] === 'response' && r['warc-target-uri'] === 'http://www.site.test/a.html')!;
    for (const r of revisits) {
      assert.equal(r['warc-profile'], 'http://netpreserve.org/warc/1.1/revisit/identical-payload-digest');
      assert.equal(r['warc-refers-to'], original['warc-record-id'], 'a revisit names the record holding the payload');
    }
    assert.equal(index.filter((r) => r['warc-type'] === 'response').length, 6, 'near copies keep their response records');
    for (const r of records.filter((r) => r.url.endsWith('copy-of-a.html') || r.url.startsWith('http://mirror'))) {
      const at = index.find((i) => Number(i['offset']) === r.warcOffset && i['warc-target-uri'] === r.url);
      assert.equal(at?.['warc-type'], 'revisit', `the page record of ${r.url} points at its revisit record`);
    }
  }));
