import { test } from 'node:test';
import assert from 'node:assert/strict';
import { extractLinks } from '../../../processors/parser/extract-links.js';
import { hammingDistance, simhash64 } from '../../../processors/parser/simhash.js';
import { NEAR_DUP_BITS } from '../../../processors/parser/near-dup-index.js';
import { prose, renderPage } from '../../../synthetic-web/sites.js';
import { standardWeb } from '../../../synthetic-web/standard-web.js';

const PORT = 8080;

/** Every HTML page of the standard test web, rendered as the server would serve it (first hit). */
function renderedPages(): { url: string; text: string }[] {
  const out: { url: string; text: string }[] = [];
  for (const site of standardWeb()) {
    for (const [path, spec] of Object.entries(site.pages)) {
      if (spec.contentType !== undefined && !spec.contentType.startsWith('text/html')) continue;
      const body = renderPage(spec, { port: PORT, host: site.host, path, pageHits: 1 });
      const html = typeof body === 'string' ? body : Buffer.from(body).toString('utf8');
      const url = `http://${site.host}:${PORT}${path}`;
      out.push({ url, text: extractLinks(html, url).text });
    }
  }
  return out;
}

test('SimHash is stable, 8 bytes, and undefined for texts too short to compare', () => {
  const text = prose('stable', 200);
  const a = simhash64(text)!;
  assert.equal(a.length, 8);
  assert.deepEqual(simhash64(text), a);
  assert.equal(simhash64('just a few words here'), undefined);
  assert.equal(simhash64(''), undefined);
});

test('SimHash ignores case, punctuation and numbers, and keeps word order', () => {
  const body = prose('article body', 300);
  const one = simhash64(`Updated 2026-01-01T10:00:00.000Z (edition 1). ${body}`)!;
  const two = simhash64(`updated 2027-12-31T23:59:59.999Z edition 42 ${body.toUpperCase()}`)!;
  assert.equal(hammingDistance(one, two), 0);
  const reversed = simhash64(body.split(' ').reverse().join(' '))!;
  assert.ok(hammingDistance(one, reversed) > 10, 'the same words in another order are another text');
});

test('editions of the news article are near-duplicates of each other', () => {
  const news = standardWeb().find((s) => s.host === 'news.test')!;
  const texts = [1, 2, 3, 17].map((hits) => {
    const body = renderPage(news.pages['/story.html']!, {
      port: PORT,
      host: 'news.test',
      path: '/story.html',
      pageHits: hits,
    });
    return extractLinks(String(body), `http://news.test:${PORT}/story.html`).text;
  });
  assert.notEqual(texts[0], texts[1], 'the editions differ');
  for (const t of texts.slice(1)) assert.ok(hammingDistance(simhash64(texts[0]!)!, simhash64(t)!) <= NEAR_DUP_BITS);
});

test('a few edited sentences in a long page stay within 3 bits; a different page does not', () => {
  const words = prose('long page', 2_000).split(' ');
  const edited = [...words];
  for (const at of [100, 900, 1700]) edited[at] = 'changed';
  const base = simhash64(words.join(' '))!;
  assert.ok(hammingDistance(base, simhash64(edited.join(' '))!) <= NEAR_DUP_BITS);
  assert.ok(hammingDistance(base, simhash64(prose('another page', 2_000))!) > NEAR_DUP_BITS);
});

test('no two distinct pages of the test web are within 3 bits', () => {
  const pages = renderedPages();
  const hashes = pages.map((p) => ({ url: p.url, text: p.text, hash: simhash64(p.text) }));
  assert.ok(hashes.filter((h) => h.hash !== undefined).length >= 40, 'most pages have a SimHash');
  const close: string[] = [];
  for (let i = 0; i < hashes.length; i++) {
    for (let j = i + 1; j < hashes.length; j++) {
      const a = hashes[i]!;
      const b = hashes[j]!;
      if (a.hash === undefined || b.hash === undefined || a.text === b.text) continue;
      // the news article under three paths is the one intended near-duplicate
      if (a.url.includes('//news.test') && b.url.includes('//news.test')) continue;
      if (hammingDistance(a.hash, b.hash) <= NEAR_DUP_BITS) close.push(`${a.url} ~ ${b.url}`);
    }
  }
  assert.deepEqual(close, []);
});

test('SimHash values are pinned: stored SimHashes stay comparable across releases', () => {
  // computed by the first implementation (16 nibble counters); any rewrite must reproduce them
  const pinned: [string, string][] = [
    ['one two three four five six seven eight nine ten', '18ab14c2c2408240'],
    [prose('pinned', 400), '0513f0d49ca93270'],
    ['Ünïcödé Straße ΑΒΓ δέλτα 東京 タワー 𝒜𝒷𝒸 naïve café 2026-05-01 ' + prose('unicode', 60), '2b0238c89a52709e'],
    [prose('long pinned page', 5000), '4a8bcf205e144d4b'],
  ];
  for (const [text, hex] of pinned) assert.equal(simhash64(text)?.toString('hex'), hex, text.slice(0, 40));
});
