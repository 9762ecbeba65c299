import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, mkdirSync, readFileSync, readdirSync, symlinkSync } from 'node:fs';
import { request } from 'node:http';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { SyntheticWeb } from '../../synthetic-web/synthetic-web.js';
import { crawlArgs, exportPageRecords, removeDir, sh, sleep, startCli, tempDir, writeSeeds } from './harness.js';
import { python } from '../python/python.js';

interface Entry {
  key: string;
  timestamp: string;
  fields: Record<string, string>;
}

function parseCdxj(text: string): Entry[] {
  return text
    .split('\n')
    .filter((l) => l !== '')
    .map((line) => {
      const [key, timestamp] = line.split(' ', 2) as [string, string];
      return {
        key,
        timestamp,
        fields: JSON.parse(line.slice(key.length + timestamp.length + 2)) as Record<string, string>,
      };
    });
}

function sha1Base32(data: Buffer): string {
  const digest = createHash('sha1').update(data).digest();
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  let bits = 0;
  let value = 0;
  let out = '';
  for (const byte of digest) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += alphabet[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  return 'sha1:' + out;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** A GET that hands back the body as sent: no content decoding (fetch() would gunzip a gzip-encoded page). */
function get(url: string): Promise<{ status: number; body: Buffer }> {
  return new Promise((resolve, reject) => {
    request(url, { headers: { 'accept-encoding': 'gzip, br' } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    })
      .on('error', reject)
      .end();
  });
}

test('each WARC of a crawl has a CDXJ index equal to cdxj-indexer’s, and pywb replays the crawled pages from them', async (t) => {
  const web = await SyntheticWeb.start();
  const dir = tempDir('cdxj');
  t.after(async () => {
    await web.close();
    removeDir(dir);
  });
  const data = join(dir, 'data');
  // the smallest files allowed: any file but the last is closed by rotation, the last at shutdown
  const run = await startCli(crawlArgs(writeSeeds(dir, web.seedUrls()), data, ['--warc-max-file', '1048576'])).exited;
  assert.equal(run.code, 0, `crawl exited ${run.code}\n${run.stderr}`);

  const warcDir = join(data, 'warc');
  const names = readdirSync(warcDir).sort();
  const warcs = names.filter((n) => n.endsWith('.warc.gz'));
  assert.ok(warcs.length >= 1, `the crawl wrote no WARC file: ${names.join(' ')}`);
  assert.deepEqual(
    names.filter((n) => !n.endsWith('.warc.gz')),
    warcs.map((n) => n.replace(/\.warc\.gz$/, '.cdxj')),
    'exactly one index beside each WARC, and no temporary or open file',
  );

  // the independent indexer (pywb's own), sorted as pywb reads indexes; entries compared parsed
  const ours = new Map<string, Entry[]>();
  for (const warc of warcs) {
    const mine = parseCdxj(readFileSync(join(warcDir, warc.replace(/\.warc\.gz$/, '.cdxj')), 'utf8'));
    const theirs = await sh(python(), ['-m', 'cdxj_indexer.main', '--sort', join(warcDir, warc)]);
    assert.equal(theirs.code, 0, `cdxj-indexer failed on ${warc}: ${theirs.stderr}`);
    assert.deepEqual(mine, parseCdxj(theirs.stdout), `${warc}: the index differs from cdxj-indexer's`);
    ours.set(warc, mine);
  }
  const all = [...ours.values()].flat();
  assert.ok(
    all.some((e) => e.fields['mime'] === 'warc/revisit'),
    'the test web has exact copies: revisit lines are compared too',
  );

  // every archived page record is findable in the index at its own (file, offset, length)
  const records = exportPageRecords(data).filter((r) => r.warcFile !== null);
  assert.ok(records.length > 10, `too few archived page records: ${records.length}`);
  const byLocation = new Map(all.map((e) => [`${e.fields['filename']}@${e.fields['offset']}`, e]));
  for (const r of records) {
    const e = byLocation.get(`${r.warcFile}@${r.warcOffset}`);
    assert.ok(e !== undefined, `${r.url}: no index line for ${r.warcFile}@${r.warcOffset}`);
    assert.equal(e.fields['url'], r.url);
    assert.equal(e.fields['length'], String(r.warcLength));
  }

  // pywb's wayback serving a collection made of the crawl's WARCs and these very index files
  const root = join(dir, 'pywb');
  const coll = join(root, 'collections', 'crawl');
  mkdirSync(join(coll, 'archive'), { recursive: true });
  mkdirSync(join(coll, 'indexes'), { recursive: true });
  for (const warc of warcs) {
    symlinkSync(join(warcDir, warc), join(coll, 'archive', warc));
    const index = warc.replace(/\.warc\.gz$/, '.cdxj');
    copyFileSync(join(warcDir, index), join(coll, 'indexes', index));
  }
  const port = await freePort();
  const wayback = spawn(
    python(),
    [
      '-c',
      'import sys; from pywb.apps.cli import wayback; sys.exit(wayback())',
      '-p',
      String(port),
      '-b',
      '127.0.0.1',
      '-d',
      root,
    ],
    { cwd: root, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let waybackLog = '';
  wayback.stderr!.on('data', (d: Buffer) => (waybackLog += d.toString()));
  const waybackExited = new Promise((resolve) => wayback.on('close', resolve));
  t.after(async () => {
    wayback.kill('SIGTERM');
    await waybackExited;
  });
  const base = `http://127.0.0.1:${port}/crawl`;
  for (let i = 0; ; i++) {
    const up = await get(`${base}/`).catch(() => undefined);
    if (up?.status === 200) break;
    assert.ok(i < 120 && wayback.exitCode === null, `pywb did not start:\n${waybackLog}`);
    await sleep(500);
  }

  // every archived 200 HTML page, as captured (id_: the payload unmodified) and as a browser sees it
  const pages = records.filter((r) => r.status === 200 && (r.contentType ?? '').startsWith('text/html'));
  assert.ok(pages.length > 5, `too few HTML pages: ${pages.length}`);
  for (const r of pages) {
    const e = byLocation.get(`${r.warcFile}@${r.warcOffset}`)!;
    const replay = await get(`${base}/${e.timestamp}id_/${r.url}`);
    assert.equal(replay.status, 200, `${r.url}: replay answered ${replay.status}`);
    assert.equal(sha1Base32(replay.body), r.payloadDigest, `${r.url}: pywb served other bytes than were fetched`);
  }
  const page = pages[0]!;
  const e = byLocation.get(`${page.warcFile}@${page.warcOffset}`)!;
  const original = (await get(`${base}/${e.timestamp}id_/${page.url}`)).body.toString('utf8');
  const title = /<title>([^<]+)<\/title>/i.exec(original);
  assert.ok(title !== null, `${page.url} has a title to look for`);
  const rewritten = await get(`${base}/${e.timestamp}mp_/${page.url}`);
  assert.equal(rewritten.status, 200);
  assert.ok(rewritten.body.toString('utf8').includes(title[1]!), `the replayed page lacks its title ${title[1]}`);
});
