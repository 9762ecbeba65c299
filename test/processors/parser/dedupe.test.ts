import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { FetchedPage, PageRecord } from '../../../schemas/types.js';
import { prose } from '../../../synthetic-web/sites.js';
import { ParserTasks } from './parser-tasks.js';
import { fetchedPageFor } from './fetched-page.js';
import { packedFingerprints } from '../../../processors/common/fingerprint.js';
import { assertWarcioCheckPasses, warcioIndex } from '../../python/warcio.js';

let clock = Date.parse('2026-05-01T12:00:00Z');
function fetched(url: string, html: string, status = 200): FetchedPage {
  return fetchedPageFor(url, {
    leaseId: `l-${clock}`,
    site: new URL(url).hostname.split('.').slice(-2).join('.'),
    fetchedAt: (clock += 1_000),
    status,
    body: Buffer.from(html, 'utf8'),
  });
}

const article = (edition: number) =>
  `<html><head><title>Harbour</title></head><body><p>Updated 2026-05-0${edition}T10:0${edition}:00Z, edition ${edition}</p><p>${prose('harbour', 300)}</p><a href="/more.html">more</a></body></html>`;
const distinct = (seed: string) =>
  `<html><body><p>${prose(seed, 150)}</p><a href="/${seed}.html">next</a></body></html>`;

const short = (url: string | null) => url?.replace('http://', '') ?? null;

interface Crawl {
  dupOf: Record<string, string | null>;
  records: PageRecord[];
  linkSources: string[];
  warc: Record<string, string>[];
}

/** The pages below through `partitions` parser tasks, with a restart of every task halfway. */
async function crawl(partitions: number): Promise<Crawl> {
  clock = Date.parse('2026-05-01T12:00:00Z');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'crawlstream-dedupe-'));
  try {
    let tasks = await ParserTasks.open(dir, partitions);
    const records: PageRecord[] = [];
    const linkSources: string[] = [];
    const feed = (pages: FetchedPage[]) => {
      for (const p of pages) {
        tasks.fetched(p);
        tasks.drain();
      }
      tasks.commit();
    };
    feed([
      fetched('http://www.site.test/a.html', distinct('alpha')),
      // byte for byte on another site: a revisit, found whatever partitions the two sites hash to
      fetched('http://mirror.test/a.html', distinct('alpha')),
      fetched('http://www.site.test/story.html', article(1)),
      // a new edition of the article on its own site: a near copy, keeps its response record
      fetched('http://www.site.test/print/story.html', article(2)),
      // the near copy mirrored byte for byte: a revisit of it, but an alias of its original
      fetched('http://mirror.test/print/story.html', article(2)),
      fetched('http://www.site.test/b.html', distinct('beta')),
      fetched('http://other.test/c.html', distinct('gamma')),
      fetched('http://other.test/copy.html', article(1)),
      // a near copy on another site is another site's page: near copies are found within a site
      fetched('http://other.test/story.html', article(4)),
      fetched('http://www.site.test/missing.html', distinct('alpha'), 404),
    ]);
    await tasks.close();
    records.push(...tasks.records);
    linkSources.push(...tasks.links.map((l) => l.sourceUrl!));
    // every batch carries the frontier's seen-set keys of its links, computed once, here
    assert.ok(tasks.links.length > 0);
    for (const b of tasks.links)
      assert.deepEqual(
        b.fingerprints,
        packedFingerprints(b.links.map((l) => l.url)),
        `fingerprints of the links from ${b.sourceUrl}`,
      );

    // restarted tasks: the same RocksDBs, digests and indexes are read back from them
    tasks = await ParserTasks.open(dir, partitions);
    feed([
      fetched('http://www.site.test/copy-of-a.html', distinct('alpha')),
      fetched('http://www.site.test/story.html?amp=1', article(3)),
      fetched('http://www.site.test/c.html', distinct('gamma')),
      // a repeated fetch of a recorded URL: archived as a revisit of itself, publishes nothing
      fetched('http://www.site.test/a.html', distinct('alpha')),
    ]);
    await tasks.close();
    records.push(...tasks.records);
    linkSources.push(...tasks.links.map((l) => l.sourceUrl!));

    const warc = tasks.warcFiles().flatMap((f) => {
      assertWarcioCheckPasses(f);
      return warcioIndex(f, [
        'warc-type',
        'warc-target-uri',
        'warc-record-id',
        'warc-refers-to-target-uri',
        'warc-refers-to',
        'warc-profile',
      ]).map((r) => ({ ...r, file: path.basename(f) }));
    });
    const dupOf = Object.fromEntries(records.map((r) => [short(r.url)!, short(r.duplicateOf)]));
    return { dupOf, records, linkSources, warc };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const EXPECTED = {
  'www.site.test/a.html': null,
  'mirror.test/a.html': 'www.site.test/a.html',
  'www.site.test/story.html': null,
  'www.site.test/print/story.html': 'www.site.test/story.html',
  'mirror.test/print/story.html': 'www.site.test/story.html',
  'www.site.test/b.html': null,
  'other.test/c.html': null,
  'other.test/copy.html': 'www.site.test/story.html',
  'other.test/story.html': null,
  'www.site.test/missing.html': null,
  'www.site.test/copy-of-a.html': 'www.site.test/a.html',
  'www.site.test/story.html?amp=1': 'www.site.test/story.html',
  'www.site.test/c.html': 'other.test/c.html',
};

const EXACT_COPIES = [
  'mirror.test/a.html',
  'mirror.test/print/story.html',
  'other.test/copy.html',
  'www.site.test/copy-of-a.html',
  'www.site.test/c.html',
];

for (const partitions of [1, 3, 4, 8]) {
  test(`with ${partitions} partition(s), exact copies on any site are revisits and aliases of their original, near copies within a site too`, async () => {
    const { dupOf, records, linkSources, warc } = await crawl(partitions);
    assert.deepEqual(dupOf, EXPECTED);
    assert.equal(records.length, Object.keys(EXPECTED).length, 'each URL recorded once, the repeated fetch not again');
    for (const r of records.filter((r) => r.duplicateOf !== null))
      assert.equal(r.outlinkCount, 0, `links of ${r.url} were followed`);
    assert.deepEqual(
      linkSources.map(short).sort(),
      [
        'www.site.test/a.html',
        'www.site.test/story.html',
        'www.site.test/b.html',
        'other.test/c.html',
        'other.test/story.html',
      ].sort(),
    );
    const byUrl = new Map(records.map((r) => [short(r.url), r]));
    assert.deepEqual(
      byUrl.get('mirror.test/a.html')!.simhash,
      byUrl.get('www.site.test/a.html')!.simhash,
      'an exact copy carries the SimHash of its original',
    );
    assert.equal(byUrl.get('www.site.test/missing.html')!.simhash, null, 'a 404 takes no part in duplicate detection');

    // revisits for the exact copies, each referring to the first response record of its payload
    const revisits = warc.filter((r) => r['warc-type'] === 'revisit');
    assert.deepEqual(
      revisits.map((r) => [short(r['warc-target-uri']!), short(r['warc-refers-to-target-uri']!)]).sort(),
      [
        ['mirror.test/a.html', 'www.site.test/a.html'],
        ['mirror.test/print/story.html', 'www.site.test/print/story.html'],
        ['other.test/copy.html', 'www.site.test/story.html'],
        ['www.site.test/copy-of-a.html', 'www.site.test/a.html'],
        ['www.site.test/c.html', 'other.test/c.html'],
        ['www.site.test/a.html', 'www.site.test/a.html'],
      ].sort(),
    );
    for (const r of revisits) {
      const original = warc.find(
        (o) => o['warc-type'] === 'response' && o['warc-target-uri'] === r['warc-refers-to-target-uri'],
      )!;
      assert.equal(r['warc-profile'], 'http://netpreserve.org/warc/1.1/revisit/identical-payload-digest');
      assert.equal(
        r['warc-refers-to'],
        original['warc-record-id'],
        `the revisit of ${r['warc-target-uri']} names the record holding the payload`,
      );
    }
    // one response per distinct payload and per near copy, nothing stored twice
    assert.deepEqual(
      warc
        .filter((r) => r['warc-type'] === 'response')
        .map((r) => short(r['warc-target-uri']!))
        .sort(),
      [
        'www.site.test/a.html',
        'www.site.test/story.html',
        'www.site.test/print/story.html',
        'www.site.test/b.html',
        'other.test/c.html',
        'other.test/story.html',
        'www.site.test/missing.html',
        'www.site.test/story.html?amp=1',
      ].sort(),
    );
    for (const r of records) {
      const at = warc.find((i) => i['file'] === r.warcFile && Number(i['offset']) === r.warcOffset);
      assert.equal(at?.['warc-target-uri'], r.url, `the page record of ${r.url} points at its own WARC record`);
      assert.equal(
        at?.['warc-type'],
        EXACT_COPIES.includes(short(r.url)!) ? 'revisit' : 'response',
        `the WARC record of ${r.url}`,
      );
    }
  });
}
