import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SyntheticWeb } from '../../synthetic-web/synthetic-web.js';
import type { LinkBatch, PageContent, PageRecord } from '../../schemas/types.js';
import { EmbeddedLog } from '../../runtime/engines/embedded/log-store.js';
import { readTopic } from '../../runtime/engines/embedded/topic-reader.js';
import { PARSER_VERSION } from '../../processors/parser/parser-version.js';
import { reparse, runReparse, warcFilesOf } from '../../cli/replay-reparse.js';
import { isDefect, readWarcFile } from '../../processors/parser/warc-reader.js';
import { crawlArgs, exportPageRecords, removeDir, startCli, tempDir, writeSeeds } from './harness.js';

/**
 * `replay reparse` on the embedded engine, after a real crawl of the whole loopback test web
 * (redirects, errors, sitemaps, exact and near copies, charsets): the records it re-derives from
 * the WARC files equal the crawl's own, it is idempotent, and it leaves the frontier alone.
 */

/** Fields a reparse legitimately writes differently from the crawl: it marks its records. */
const REPARSE_ONLY_FIELDS = ['reparsed'] as const;

let dir: string;
/** Untouched copies of the crawl's data dir, one per test that needs a fresh start. */
let pristine: string;

before(async () => {
  const web = await SyntheticWeb.start();
  dir = tempDir('reparse');
  try {
    const seeds = writeSeeds(dir, web.seedUrls());
    const run = await startCli(crawlArgs(seeds, join(dir, 'data'))).exited;
    assert.equal(run.code, 0, `crawl exited ${run.code}\n${run.stderr}`);
  } finally {
    await web.close();
  }
  pristine = join(dir, 'pristine');
  cpSync(join(dir, 'data'), pristine, { recursive: true });
});

after(() => removeDir(dir));

function freshCopy(name: string): string {
  const copy = join(dir, name);
  cpSync(pristine, copy, { recursive: true });
  return copy;
}

const identity = (r: PageRecord) => `${r.warcFile}@${r.warcOffset}`;
/** A page record with a WARC record to re-derive it from: all but a response of a refused type (CS_REFUSED_TYPE). */
const archived = (r: PageRecord) => r.warcFile !== null;

async function countTopic(data: string, topic: string): Promise<number> {
  return readTopic(data, topic, () => undefined);
}

test('a reparse re-derives one record per archived page, equal to the crawl record in every field but the reparse mark; a second adds nothing', async () => {
  const data = freshCopy('twice');
  const crawledAll = exportPageRecords(data);
  const crawled = crawledAll.filter(archived);
  assert.ok(crawled.length > 30, `the crawl recorded only ${crawled.length} pages`);
  const linksBefore = await countTopic(data, 'links');

  const lines: string[] = [];
  assert.equal(await runReparse(['--data', data], (l) => lines.push(l)), 0);
  const all = exportPageRecords(data);
  const reparsed = all.filter((r) => r.reparsed);
  assert.equal(all.length, crawledAll.length + reparsed.length, 'the crawl records are kept as they were');
  assert.match(lines.at(-1)!, new RegExp(`^${reparsed.length} re-derived, 0 already present`));

  // one per archived page: the same WARC records the crawl's page records point at, each once
  const crawledById = new Map(crawled.map((r) => [identity(r), r]));
  assert.equal(crawledById.size, crawled.length, 'crawl records point at distinct WARC records');
  assert.deepEqual(reparsed.map(identity).sort(), [...crawledById.keys()].sort());
  let copies = 0;
  for (const r of reparsed) {
    const original = crawledById.get(identity(r))!;
    assert.equal(r.parserVersion, PARSER_VERSION);
    assert.equal(original.parserVersion, PARSER_VERSION);
    if (r.duplicateOf !== null) copies++;
    for (const field of Object.keys(original) as (keyof PageRecord)[]) {
      if ((REPARSE_ONLY_FIELDS as readonly string[]).includes(field)) continue;
      assert.deepEqual(r[field], original[field], `${r.url}: ${field} differs from the crawl's record`);
    }
    assert.equal(r.reparsed, true);
  }
  assert.ok(copies >= 3, `only ${copies} copies among the re-derived records: the test web has exact and near ones`);
  assert.equal(await countTopic(data, 'links'), linksBefore, 'without --emit-links the links topic is untouched');

  // a second run finds every record present and writes nothing
  const again: string[] = [];
  assert.equal(await runReparse(['--data', data], (l) => again.push(l)), 0);
  assert.match(again.at(-1)!, new RegExp(`^0 re-derived, ${reparsed.length} already present`));
  assert.equal(exportPageRecords(data).length, all.length);
});

async function contents(data: string): Promise<PageContent[]> {
  const out: PageContent[] = [];
  // plain objects: each read decodes into classes of its own
  await readTopic(data, 'page-content', (r) => out.push(JSON.parse(JSON.stringify(r.value)) as PageContent));
  return out;
}

const fetchOf = (r: { url: string; fetchTime: number; visit: number }) => `${r.url} ${r.fetchTime} ${r.visit}`;

test('a reparse publishes page content for every HTML page it re-derives from a response record, equal to the crawl’s, once', async () => {
  const data = freshCopy('content');
  const crawledContent = await contents(data);
  const lines: string[] = [];
  assert.equal(await runReparse(['--data', data], (l) => lines.push(l)), 0);
  const reparsed = exportPageRecords(data).filter((r) => r.reparsed);
  const after = await contents(data);
  const added = after.length - crawledContent.length;

  // every re-derived record of a page whose body was HTML has its content; judged from the record's
  // own fields and WARC record, not from what the crawl published
  const warcTypes = new Map<string, string>();
  for (const file of warcFilesOf([join(data, 'warc')]))
    for (const w of readWarcFile(file)) if (!isDefect(w)) warcTypes.set(`${w.file}@${w.offset}`, w.type);
  const html = reparsed.filter(
    (r) =>
      r.status >= 200 &&
      r.status < 300 &&
      r.errorCode === null &&
      r.kind === 'PAGE' &&
      /^(text\/html|application\/xhtml\+xml)\b/i.test(r.contentType ?? ''),
  );
  // an exact copy is archived as a revisit record, without the body: the crawl read its body for
  // content, a reparse has none to read (docs/REPLAY.md)
  const exactCopies = html.filter((r) => warcTypes.get(identity(r)) === 'revisit');
  const withBody = html.filter((r) => warcTypes.get(identity(r)) === 'response');
  assert.equal(exactCopies.length + withBody.length, html.length, 'a page record points at no response or revisit');
  assert.ok(withBody.length > 20, `only ${withBody.length} HTML pages among the re-derived records`);
  assert.ok(exactCopies.length >= 1, 'the test web has exact copies of HTML pages');
  const byFetch = new Map<string, PageContent[]>();
  for (const c of after) byFetch.set(fetchOf(c), [...(byFetch.get(fetchOf(c)) ?? []), c]);
  const crawledByFetch = new Map(crawledContent.map((c) => [fetchOf(c), c]));
  for (const r of withBody) {
    const found = byFetch.get(fetchOf(r)) ?? [];
    // the crawl's record, then the reparse's (appended later to the same partition)
    assert.equal(found.length, 2, `${r.url}: ${found.length} page-content records for its fetch`);
    assert.deepEqual(found[1], found[0], `${r.url}: the reparsed content differs from the crawl's`);
    assert.deepEqual(found[0], crawledByFetch.get(fetchOf(r)));
    assert.equal(found[1]!.duplicateOf, r.duplicateOf);
    assert.equal(found[1]!.status, r.status);
  }
  for (const r of exactCopies)
    assert.equal(byFetch.get(fetchOf(r))?.length, 1, `${r.url}: content re-derived for a copy`);
  // and none for anything else
  assert.equal(added, withBody.length, 'content was published for a page that is not HTML');
  assert.equal(crawledContent.length, html.length, 'the crawl published content for a different set of pages');
  assert.match(lines.at(-1)!, new RegExp(`^${reparsed.length} re-derived, 0 already present, ${added} page contents`));

  // a second run publishes no content again
  const again: string[] = [];
  assert.equal(await runReparse(['--data', data], (l) => again.push(l)), 0);
  assert.match(again.at(-1)!, /^0 re-derived, \d+ already present, 0 page contents/);
  assert.equal((await contents(data)).length, after.length);
});

test('a changed parser version re-derives every page again under the new number, and --emit-links sends their links', async () => {
  const data = freshCopy('new-version');
  const crawled = exportPageRecords(data).filter(archived);
  // the links topic's ends before: a reparse appends at the end of each partition
  const linkEnds = new Map<number, number>();
  await readTopic(data, 'links', (r) => linkEnds.set(r.partition, r.offset + 1));
  const first = await reparse(
    { dataDir: data, warcFiles: warcFilesOf([join(data, 'warc')]), emitLinks: false, crawlArgs: [] },
    () => undefined,
  );
  const next = await reparse(
    {
      dataDir: data,
      warcFiles: warcFilesOf([join(data, 'warc')]),
      emitLinks: true,
      crawlArgs: [],
      parserVersion: PARSER_VERSION + 1,
    },
    () => undefined,
  );
  assert.equal(next.derived, first.derived, 'every page again, none skipped: the version differs');
  assert.equal(next.alreadyPresent, 0);
  const records = exportPageRecords(data);
  const v2 = records.filter((r) => r.parserVersion === PARSER_VERSION + 1);
  assert.equal(v2.length, crawled.length);
  assert.ok(v2.every((r) => r.reparsed));

  // the links sent are the re-derived records' outlinks, each page's once (the crawl's own link
  // batches are gone: the embedded engine drops consumed records of internal topics)
  const sentBySource = new Map<string, number>();
  await readTopic(data, 'links', (r) => {
    const b = r.value as LinkBatch;
    if (r.offset < (linkEnds.get(r.partition) ?? 0)) return;
    assert.notEqual(b.sourceUrl, null);
    sentBySource.set(b.sourceUrl!, (sentBySource.get(b.sourceUrl!) ?? 0) + b.links.length);
  });
  const withLinks = v2.filter((r) => r.outlinkCount > 0);
  assert.ok(withLinks.length > 10, `only ${withLinks.length} pages with outlinks`);
  assert.deepEqual([...sentBySource.keys()].sort(), withLinks.map((r) => r.url).sort());
  for (const r of withLinks) {
    const sent = sentBySource.get(r.url)!;
    // outlinkCount also counts links whose site cannot be named (no batch can carry them)
    assert.ok(sent > 0 && sent <= r.outlinkCount, `${r.url}: ${sent} links sent, ${r.outlinkCount} counted`);
  }
});

test('a corrupt WARC record is reported with its file and offset and skipped; the other pages are re-derived', async () => {
  const data = freshCopy('corrupt');
  const crawled = exportPageRecords(data).filter(archived);
  // garble the middle of one page's response record, in place
  const victim = crawled.find((r) => r.status === 200 && r.duplicateOf === null && r.warcLength! > 200)!;
  const path = join(data, 'warc', victim.warcFile!);
  const bytes = readFileSync(path);
  bytes.fill(0x55, victim.warcOffset! + 40, victim.warcOffset! + victim.warcLength! - 20);
  writeFileSync(path, bytes);

  const lines: string[] = [];
  assert.equal(await runReparse(['--data', data], (l) => lines.push(l)), 1, 'corrupt input makes the exit code 1');
  assert.ok(
    lines.some((l) => l.includes(`${victim.warcFile} at offset ${victim.warcOffset}`)),
    `no report of ${victim.warcFile}@${victim.warcOffset}:\n${lines.join('\n')}`,
  );
  const reparsed = exportPageRecords(data).filter((r) => r.reparsed);
  assert.equal(reparsed.length, crawled.length - 1);
  assert.ok(!reparsed.some((r) => identity(r) === identity(victim)));
  assert.match(lines.at(-1)!, /; 1 corrupt WARC records skipped$/);
});

test('reparse refuses a data dir a crawl holds open, and a WARC input that does not exist', async () => {
  const data = freshCopy('refusals');
  const log = await EmbeddedLog.open(join(data, 'log'));
  try {
    await assert.rejects(
      runReparse(['--data', data], () => undefined),
      { code: 'CS_STORE' },
    );
  } finally {
    await log.close();
  }
  await assert.rejects(
    runReparse(['--data', data, '--warc', join(data, 'nowhere')], () => undefined),
    {
      code: 'CS_INVALID_OPTION',
      message: /--warc .*nowhere does not exist/,
    },
  );
});
