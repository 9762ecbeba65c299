import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { reparse, warcFilesOf } from '../cli/replay-reparse.js';
import { sha1Digest } from '../processors/common/payload.js';
import { siteOf } from '../processors/common/normalize.js';
import { PARSER_VERSION } from '../processors/parser/parser-version.js';
import { fetchFacts } from '../processors/parser/warc-facts.js';
import { WarcWriter } from '../processors/parser/warc-writer.js';
import { EmbeddedLog } from '../runtime/engines/embedded/log-store.js';
import type { FetchedPage } from '../schemas/types.js';
import { figure, machineLine } from './machine.js';

// `replay reparse` end to end on the embedded engine: PAGES archived fetches of ~PAGE_BYTES HTML
// pages on SITES sites, one in COPY_EVERY an exact copy (a revisit record), written by the
// archiver's WARC writer with the fetch facts (gzip level 1, files of 64 MB), then re-derived
// through the parser (charset, links, SimHash, near duplicates on scratch RocksDB stores) and
// appended to page-records in batches of 500, each an fsynced RocksDB batch. Wall time of the
// whole run, WARC bytes read, page records written. Then the second, idempotent run.
const PAGES = 4_000;
const PAGE_BYTES = 20_000;
const SITES = 40;
const COPY_EVERY = 10;
const PARTITIONS = 4;

let state = 0x2545f491;
function rand(n: number): number {
  state ^= state << 13;
  state ^= state >>> 17;
  state ^= state << 5;
  return (state >>> 0) % n;
}
const WORDS = ['ka', 'lo', 'mi', 'ne', 'ru', 'sa', 'ti', 'vo', 'ze', 'pa', 'qui', 'dro', 'fen', 'gal', 'hob', 'jun'];
const words = (n: number) =>
  Array.from({ length: n }, () => Array.from({ length: 2 + rand(3) }, () => WORDS[rand(16)]).join('')).join(' ');

function html(site: number, i: number): Buffer {
  const parts = [`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${words(6)}</title></head><body>`];
  let size = parts[0]!.length;
  for (let p = 0; size < PAGE_BYTES; p++) {
    const para = `<p>${words(40)} <a href="/s${site}/p${rand(PAGES)}.html">${words(3)}</a> <a href="https://site${rand(SITES)}.example/p${i}-${p}.html">${words(2)}</a></p>\n`;
    parts.push(para);
    size += para.length;
  }
  parts.push('</body></html>');
  return Buffer.from(parts.join(''), 'utf8');
}

function fetched(url: string, body: Buffer, at: number): FetchedPage {
  const host = new URL(url).hostname;
  return {
    leaseId: '',
    url,
    host,
    site: siteOf(url),
    depth: 1,
    redirectHops: 0,
    attempt: 1,
    fetchedAt: at,
    durationMs: 30,
    status: 200,
    httpVersion: '1.1',
    requestHead: `GET ${new URL(url).pathname} HTTP/1.1\r\nHost: ${host}\r\n`,
    headers: [{ name: 'Content-Type', value: 'text/html; charset=utf-8' }],
    body,
    truncated: false,
    remoteAddress: '127.0.0.1',
    errorCode: null,
    errorMessage: null,
    redirectTarget: null,
    kind: 'PAGE',
    payloadDigest: sha1Digest(body),
  };
}

/** Writes the archive as the parser would: request + response + facts, a revisit for each exact copy. */
function writeArchive(dir: string): void {
  const writers = Array.from({ length: PARTITIONS }, (_, partition) => {
    const w = new WarcWriter({ dir, partition, maxFileBytes: 64 * 2 ** 20 });
    w.open();
    return w;
  });
  const firsts: { url: string; at: number; recordId: string; digest: string }[] = [];
  const start = Date.parse('2026-11-01T00:00:00Z');
  for (let i = 0; i < PAGES; i++) {
    const site = i % SITES;
    const url = `https://site${site}.example/p${i}.html`;
    const at = start + i * 1000;
    const writer = writers[i % PARTITIONS]!;
    if (i % COPY_EVERY === COPY_EVERY - 1 && firsts.length > 0) {
      const first = firsts[rand(firsts.length)]!;
      writer.writeRevisit({
        targetUri: url,
        date: new Date(at),
        refersToUri: first.url,
        refersToDate: new Date(first.at),
        refersToRecordId: first.recordId,
        payloadDigest: first.digest,
        profile: 'identical-payload-digest',
        statusLine: 'HTTP/1.1 200 OK',
        responseHeaders: [['Content-Type', 'text/html; charset=utf-8']],
        metadata: fetchFacts(fetched(url, Buffer.alloc(0), at)),
      });
      continue;
    }
    const page = fetched(url, html(site, i), at);
    const written = writer.writeRequestResponse({
      targetUri: url,
      date: new Date(at),
      requestHeaders: page.requestHead,
      statusLine: 'HTTP/1.1 200 OK',
      responseHeaders: [['Content-Type', 'text/html; charset=utf-8']],
      payload: page.body,
      payloadDigest: page.payloadDigest!,
      metadata: fetchFacts(page),
    });
    firsts.push({ url, at, recordId: written.response.recordId, digest: written.payloadDigest });
  }
  for (const w of writers) w.close();
}

async function main(): Promise<void> {
  process.stdout.write(`${machineLine()}\n`);
  const dir = mkdtempSync(join(tmpdir(), 'crawlstream-bench-reparse-'));
  try {
    const data = join(dir, 'data');
    writeArchive(join(data, 'warc'));
    const log = await EmbeddedLog.open(join(data, 'log'));
    log.ensureTopic('page-records', PARTITIONS);
    log.ensureTopic('links', PARTITIONS);
    await log.close();
    const request = {
      dataDir: data,
      warcFiles: warcFilesOf([join(data, 'warc')]),
      emitLinks: false,
      crawlArgs: ['--partitions', String(PARTITIONS)],
    };
    const first = await reparse(request, (l) => process.stdout.write(`  ${l}\n`));
    figure(
      'reparse pages',
      (first.fetches / first.elapsedMs) * 1000,
      `pages/s (${first.derived} page records, parser version ${PARSER_VERSION})`,
    );
    figure(
      'reparse WARC read',
      first.bytes / 1e6 / (first.elapsedMs / 1000),
      `MB/s (${(first.bytes / 1e6).toFixed(1)} MB gzip)`,
    );
    const again = await reparse(request, (l) => process.stdout.write(`  ${l}\n`));
    figure('second reparse (all present)', (again.fetches / again.elapsedMs) * 1000, 'pages/s');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
