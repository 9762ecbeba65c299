import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { decodeBody } from '../processors/fetcher/decode.js';
import { Deduplicator, digestEntryCodec } from '../processors/parser/dedupe.js';
import { extractLinks } from '../processors/parser/extract-links.js';
import { fingerprint64 } from '../processors/parser/fingerprint.js';
import { simhash64 } from '../processors/parser/simhash.js';
import { sha1Digest } from '../processors/parser/warc-records.js';
import { WarcWriter } from '../processors/parser/warc-writer.js';
import { openRocks } from '../state/rocks.js';
import { RocksKeyValueStore } from '../state/rocks-store.js';
import { bufferCodec, stringCodec } from '../state/state-store.js';
import { figure, machineLine } from './machine.js';

// The parser's per-page work on a synthetic article page: decode, extract links and text
// (htmlparser2), normalize every link, fingerprint it, SimHash the text, write request + response
// to a WARC file (gzip per record, SHA-1 digests). CPU time = user + system of this process.
const ROUNDS = 300;

let state = 0x9e3779b9;
function rand(n: number): number {
  state ^= state << 13;
  state ^= state >>> 17;
  state ^= state << 5;
  return (state >>> 0) % n;
}
const SYLLABLES = ['ka', 'lo', 'mi', 'ne', 'ru', 'sa', 'ti', 'vo', 'ze', 'pa', 'qui', 'dro', 'fen', 'gal', 'hob', 'jun'];
function words(n: number): string {
  const out: string[] = [];
  for (let i = 0; i < n; i++) out.push(Array.from({ length: 2 + rand(3) }, () => SYLLABLES[rand(16)]).join(''));
  return out.join(' ');
}

/** A news-like page of about `bytes`: head with scripts and styles, navigation, paragraphs with inline links. */
function page(bytes: number, seed: number): string {
  state = 0x9e3779b9 ^ seed;
  const parts = [
    '<!doctype html><html><head><meta charset="utf-8"><title>', words(8), '</title>',
    '<link rel="canonical" href="https://www.example.com/news/article.html">',
    '<style>body{font-family:sans-serif}.nav a{margin:0 4px}</style>',
    '<script>window.dataLayer=window.dataLayer||[];function gtag(){dataLayer.push(arguments)}</script></head><body>',
    '<nav class="nav">',
  ];
  for (let i = 0; i < 25; i++) parts.push(`<a href="/section/${i}/">${words(2)}</a>`);
  parts.push('</nav><article>');
  let size = parts.join('').length;
  let p = 0;
  while (size < bytes - 400) {
    const para = `<p>${words(30)} <a href="${rand(4) === 0 ? 'https://other' + rand(50) + '.example.org' : ''}/story/${seed}-${p}.html?utm_source=x&id=${rand(1000)}">${words(3)}</a> ${words(25)}</p>\n`;
    parts.push(para);
    size += para.length;
    p++;
  }
  parts.push('</article><footer>', words(20), '</footer></body></html>');
  return parts.join('');
}

const REQUEST = 'GET /news/article.html HTTP/1.1\r\nHost: www.example.com\r\nUser-Agent: crawlstream/0.1\r\nAccept-Encoding: gzip\r\n\r\n';

function run(label: string, size: number, writer: WarcWriter, gzip: boolean, dedupe?: Deduplicator): void {
  const pages = Array.from({ length: 8 }, (_, i) => Buffer.from(page(size, i + size), 'utf8'));
  const bodies = gzip ? pages.map((p) => gzipSync(p)) : pages;
  const headers: [string, string][] = [['Content-Type', 'text/html; charset=utf-8'], ...(gzip ? [['Content-Encoding', 'gzip'] as [string, string]] : [])];
  let links = 0;
  const once = (i: number) => {
    const url = `https://www.example.com/news/${i}.html`;
    const body = bodies[i % bodies.length]!;
    const decoded = decodeBody(body, gzip ? 'gzip' : undefined, 50 * 1024 * 1024);
    const extracted = extractLinks(decoded.body.toString('utf8'), url);
    for (const l of extracted.links) fingerprint64(l.url);
    fingerprint64(url);
    links += extracted.links.length;
    const simhash = simhash64(extracted.text);
    const digest = dedupe ? sha1Digest(body) : undefined;
    if (dedupe && digest) {
      dedupe.exactCopy(digest);
      if (simhash) dedupe.nearCopy(simhash, url);
    }
    const written = writer.writeRequestResponse({ targetUri: url, date: new Date(), requestHeaders: REQUEST, statusLine: 'HTTP/1.1 200 OK', responseHeaders: headers, payload: body });
    if (dedupe && digest) dedupe.record(digest, { url, fetchedAt: Date.now(), recordId: written.response.recordId, duplicateOf: null, simhash: simhash?.toString('hex') ?? null }, simhash);
  };
  for (let i = 0; i < 50; i++) once(i);
  links = 0;
  const cpu = process.cpuUsage();
  const t = performance.now();
  for (let i = 0; i < ROUNDS; i++) once(i);
  const wall = (performance.now() - t) / ROUNDS;
  const used = process.cpuUsage(cpu);
  figure(`${label}: CPU per page (${(pages[0]!.length / 1024).toFixed(0)} KB HTML, ${Math.round(links / ROUNDS)} links${gzip ? ', gzip-encoded' : ''})`, (used.user + used.system) / 1000 / ROUNDS, 'ms');
  figure(`${label}: wall per page`, wall, 'ms');
}

/** CPU of each step alone, to show where a page's time goes. */
function breakdown(size: number, writer: WarcWriter): void {
  const body = Buffer.from(page(size, 7), 'utf8');
  const url = 'https://www.example.com/news/7.html';
  const html = body.toString('utf8');
  const extracted = extractLinks(html, url);
  const step = (name: string, fn: () => void) => {
    for (let i = 0; i < 20; i++) fn();
    const cpu = process.cpuUsage();
    for (let i = 0; i < ROUNDS; i++) fn();
    const used = process.cpuUsage(cpu);
    figure(`  ${(size / 1024).toFixed(0)} KB step: ${name}`, (used.user + used.system) / 1000 / ROUNDS, 'ms');
  };
  step('extract links + text + normalize (htmlparser2)', () => extractLinks(html, url));
  step('fingerprint every link', () => extracted.links.forEach((l) => fingerprint64(l.url)));
  step('SimHash of the text', () => simhash64(extracted.text));
  step('WARC request + response (gzip level 6, SHA-1 x 3, write)', () =>
    writer.writeRequestResponse({ targetUri: url, date: new Date(), requestHeaders: REQUEST, statusLine: 'HTTP/1.1 200 OK', responseHeaders: [], payload: body }),
  );
}

console.log(machineLine());
const dir = mkdtempSync(join(tmpdir(), 'crawlstream-bench-parser-'));
try {
  const writer = new WarcWriter({ dir: join(dir, 'warc'), partition: 0 });
  writer.open();
  run('24 KB page, full path', 24 * 1024, writer, false);
  run('100 KB page, full path', 100 * 1024, writer, false);
  breakdown(24 * 1024, writer);
  breakdown(100 * 1024, writer);
  const fast = new WarcWriter({ dir: join(dir, 'warc-fast'), partition: 0, gzipLevel: 1 });
  fast.open();
  run('24 KB page, full path, WARC gzip level 1', 24 * 1024, fast, false);
  run('100 KB page, full path, WARC gzip level 1', 100 * 1024, fast, false);
  fast.close();
  run('24 KB page, full path', 24 * 1024, writer, true);
  run('100 KB page, full path', 100 * 1024, writer, true);
  const db = await openRocks(join(dir, 'db'));
  const digests = new RocksKeyValueStore('parser-digests', db, stringCodec, digestEntryCodec);
  const simhashes = new RocksKeyValueStore<Buffer, Buffer>('parser-simhash', db, bufferCodec, bufferCodec);
  const dedupe = new Deduplicator(digests, simhashes);
  run('24 KB page, full path + duplicate lookups (RocksDB)', 24 * 1024, writer, false, dedupe);
  run('100 KB page, full path + duplicate lookups (RocksDB)', 100 * 1024, writer, false, dedupe);
  writer.close();
  await db.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
