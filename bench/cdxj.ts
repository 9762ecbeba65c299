import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeCdxjIndex } from '../processors/parser/cdxj-index.js';
import { WarcWriter } from '../processors/parser/warc-writer.js';
import { figure, machineLine } from './machine.js';

// What a WARC file's CDXJ index costs. The writer collects each file's lines as it appends records
// and sorts and writes them when the file closes; a file recovered after a crash is indexed by
// reading it back. One WARC of PAGES HTML pages of ~PAGE_BYTES (gzip level 1, each with its request
// and fetch-facts metadata) written with and without `cdxj` (best of RUNS each: append time and close
// time), then `writeCdxjIndex` on the closed file (read, inflate, SURT, sort, fsync, rename).
const PAGES = 5_000;
const PAGE_BYTES = 20_000;
const RUNS = 3;

const WORDS = ['ka', 'lo', 'mi', 'ne', 'ru', 'sa', 'ti', 'vo', 'ze', 'pa', 'qui', 'dro', 'fen', 'gal', 'hob', 'jun'];
let state = 0x2545f491;
function rand(n: number): number {
  state ^= state << 13;
  state ^= state >>> 17;
  state ^= state << 5;
  return (state >>> 0) % n;
}

function page(i: number): Buffer {
  let s = `<!doctype html><html><head><title>page ${i}</title></head><body>`;
  while (s.length < PAGE_BYTES) s += `<p>${Array.from({ length: 12 }, () => WORDS[rand(16)]).join(' ')}</p>`;
  return Buffer.from(s + '</body></html>');
}

function writeFile(dir: string, cdxj: boolean): { appendS: number; closeS: number } {
  const w = new WarcWriter({ dir, cdxj });
  w.open();
  const t0 = performance.now();
  for (let i = 0; i < PAGES; i++) {
    const payload = pages[i]!;
    w.writeRequestResponse({
      targetUri: `http://www.site-${i % 50}.example:8080/section/${i % 7}/page-${i}.html?b=${i}&a=1`,
      date: new Date(Date.UTC(2026, 11, 2, 10, 0, i % 60)),
      requestHeaders: `GET /section/page-${i}.html HTTP/1.1\r\nHost: www.site-${i % 50}.example\r\n`,
      statusLine: 'HTTP/1.1 200 OK',
      responseHeaders: [
        ['Content-Type', 'text/html; charset=utf-8'],
        ['Content-Length', String(payload.length)],
      ],
      payload,
      metadata: { fetchMs: String(i % 300) },
    });
  }
  const t1 = performance.now();
  w.close();
  return { appendS: (t1 - t0) / 1000, closeS: (performance.now() - t1) / 1000 };
}

console.log(machineLine());
const pages = Array.from({ length: PAGES }, (_, i) => page(i));
const root = mkdtempSync(join(tmpdir(), 'crawlstream-bench-cdxj-'));
try {
  const best = { off: Infinity, on: Infinity, close: Infinity, reread: Infinity };
  let warc = '';
  for (let r = 0; r < RUNS; r++) {
    for (const cdxj of [false, true]) {
      const dir = join(root, `${r}-${cdxj}`);
      const t = writeFile(dir, cdxj);
      if (cdxj) {
        best.on = Math.min(best.on, t.appendS);
        best.close = Math.min(best.close, t.closeS);
        warc = join(
          dir,
          readdirSync(dir).find((f) => f.endsWith('.warc.gz'))!,
        );
      } else best.off = Math.min(best.off, t.appendS);
    }
    const t0 = performance.now();
    const { lines } = writeCdxjIndex(warc);
    best.reread = Math.min(best.reread, (performance.now() - t0) / 1000);
    if (lines !== PAGES) throw new Error(`indexed ${lines} lines, expected ${PAGES}`);
  }
  const mib = statSync(warc).size / 2 ** 20;
  figure('WARC file', mib, 'MiB');
  figure('append without cdxj (best of 3)', PAGES / best.off, 'pages/s');
  figure('append with cdxj (best of 3)', PAGES / best.on, 'pages/s');
  figure('close with cdxj: sort + write the index (best of 3)', best.close * 1000, 'ms');
  figure('index by reading the file back, as after a crash (best of 3)', mib / best.reread, 'MiB/s of WARC');
} finally {
  rmSync(root, { recursive: true, force: true });
}
