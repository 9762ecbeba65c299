import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TextDecoder } from 'node:util';
import { encodeHrefQuery, encoderFor } from '../../../processors/parser/query-encoding.js';
import { extractLinks } from '../../../processors/parser/extract-links.js';
import { decodeHtml } from '../../../processors/parser/charset.js';

test('a windows-1252 page encodes its link queries in windows-1252, including the characters at 0x80-0x9F', () => {
  assert.equal(encodeHrefQuery('/s?q=café €&r=“x”', 'windows-1252'), '/s?q=caf%E9 %80&r=%93x%94');
});

test('a character the page encoding lacks becomes %26%23NNNN%3B, the standard’s &#NNNN; form', () => {
  assert.equal(encodeHrefQuery('/s?q=日x', 'windows-1252'), '/s?q=%26%2326085%3Bx');
  assert.equal(encodeHrefQuery('/s?q=😀', 'GBK'), '/s?q=%26%23128512%3B');
  assert.equal(encodeHrefQuery('/s?q=\ud800', 'Shift_JIS'), '/s?q=%26%2365533%3B', 'a lone surrogate is U+FFFD');
});

test('Shift_JIS queries: two-byte characters with ASCII second bytes keep them raw, as browsers send them', () => {
  // 日 93FA, 本 967B, 語 8CEA, 表 955C, ｱ B1; ¥ and ‾ are the JIS Roman 0x5C and 0x7E
  assert.equal(encodeHrefQuery('/s?q=日本語&t=表ｱ', 'Shift_JIS'), '/s?q=%93%FA%96{%8C%EA&t=%95\\%B1');
  assert.equal(encodeHrefQuery('/s?y=¥‾', 'Shift_JIS'), '/s?y=\\~');
  // U+2212 MINUS SIGN is encoded as U+FF0D FULLWIDTH HYPHEN-MINUS (817C)
  assert.equal(encodeHrefQuery('/s?m=−', 'Shift_JIS'), '/s?m=%81|');
});

test('GBK and gb18030 queries: € is 0x80 in GBK; gb18030 has four-byte sequences for what GBK lacks', () => {
  assert.equal(encodeHrefQuery('/s?q=中文€', 'GBK'), '/s?q=%D6%D0%CE%C4%80');
  assert.equal(encodeHrefQuery('/s?q=中文€', 'gb18030'), '/s?q=%D6%D0%CE%C4%A2%E3');
  assert.equal(encodeHrefQuery('/s?q=😀', 'gb18030'), '/s?q=%949%FC6');
});

test('only the query is encoded: path and fragment are left to UTF-8, and UTF-8 or ASCII hrefs are unchanged', () => {
  assert.equal(encodeHrefQuery('/日本/語.html?q=語#日', 'Shift_JIS'), '/日本/語.html?q=%8C%EA#日');
  assert.equal(encodeHrefQuery('/日本#a?q=語', 'Shift_JIS'), '/日本#a?q=語', 'a ? after # is in the fragment');
  assert.equal(encodeHrefQuery('/s?q=ascii only', 'Shift_JIS'), '/s?q=ascii only');
  assert.equal(encodeHrefQuery('/s?q=語', 'UTF-8'), '/s?q=語');
  assert.equal(encodeHrefQuery('/s?q=語', 'UTF-16LE'), '/s?q=語', 'UTF-16 pages use UTF-8 for URLs');
});

/** Characters of several scripts, to check each encoder against Node's decoder of the same encoding. */
const SAMPLES: Record<string, string> = {
  Shift_JIS: '日本語のテキスト、漢字と仮名。ｶﾀｶﾅ①ⅰ纊褜',
  'EUC-JP': '日本語のテキスト、漢字と仮名。ｶﾀｶﾅ',
  GBK: '中文网页编码，简体字与繁體字。€',
  gb18030: '中文网页编码，简体字与繁體字。ḿ😀',
  Big5: '繁體中文網頁編碼，臺灣。',
  'EUC-KR': '한국어 웹 페이지 인코딩입니다.',
  'windows-1251': 'Кириллица: съешь же ещё этих мягких булок',
  'KOI8-R': 'Кириллица: съешь же ещё этих мягких булок',
  'ISO-8859-7': 'Ελληνικά κείμενα',
  'windows-1250': 'Příliš žluťoučký kůň úpěl ďábelské ódy',
  'windows-874': 'ภาษาไทย',
};

test('each encoder writes bytes that the same encoding decodes back to the character', () => {
  for (const [encoding, sample] of Object.entries(SAMPLES)) {
    const encode = encoderFor(encoding)!;
    assert.ok(encode !== undefined, encoding);
    const decoder = new TextDecoder(encoding);
    for (const ch of sample) {
      if (ch.charCodeAt(0) < 0x80) continue;
      const bytes = encode(ch.codePointAt(0)!);
      assert.ok(bytes !== undefined, `${encoding} encodes ${ch}`);
      assert.equal(decoder.decode(Uint8Array.from(bytes)), ch, `${encoding}: ${ch}`);
    }
  }
});

test('extractLinks encodes link queries in the page encoding it is given, and paths in UTF-8', () => {
  const html = '<a href="/検索/結果.html?q=日本語">x</a><a href="http://other.test/?q=語#日">y</a>';
  const links = (encoding?: string) =>
    extractLinks(html, 'http://jp.test/', encoding ? { encoding } : {}).links.map((l) => l.url);
  assert.deepEqual(links('Shift_JIS'), [
    'http://jp.test/%E6%A4%9C%E7%B4%A2/%E7%B5%90%E6%9E%9C.html?q=%93%FA%96{%8C%EA',
    'http://other.test/?q=%8C%EA',
  ]);
  assert.deepEqual(links('EUC-JP'), [
    'http://jp.test/%E6%A4%9C%E7%B4%A2/%E7%B5%90%E6%9E%9C.html?q=%C6%FC%CB%DC%B8%EC',
    'http://other.test/?q=%B8%EC',
  ]);
  assert.deepEqual(links(), [
    'http://jp.test/%E6%A4%9C%E7%B4%A2/%E7%B5%90%E6%9E%9C.html?q=%E6%97%A5%E6%9C%AC%E8%AA%9E',
    'http://other.test/?q=%E8%AA%9E',
  ]);
  assert.deepEqual(links('UTF-8'), links());
});

test('the bytes a windows-1252 query was encoded to decode back to its characters', () => {
  const encoded = encodeHrefQuery('/s?q=Œuvre “déjà” ™', 'windows-1252').slice('/s?q='.length);
  const bytes = Buffer.from(
    encoded.replace(/%([0-9A-F]{2})/g, (_, h: string) => String.fromCharCode(parseInt(h, 16))),
    'latin1',
  );
  assert.equal(decodeHtml(bytes, { encoding: 'windows-1252', source: 'header', bomLength: 0 }), 'Œuvre “déjà” ™');
});

test('ISO-2022-JP queries switch to JIS X 0208 and back to ASCII with escape sequences, half-width katakana as full-width', () => {
  // 日 is 0x46 0x7C, 本 0x4B 0x5C; ｱ becomes ア, 0x25 0x22 (`%` raw, as the standard leaves it); ¥ is JIS X 0201 Roman 0x5C
  assert.equal(encodeHrefQuery('/s?q=日本&r=ｱ¥x', 'ISO-2022-JP'), '/s?q=%1B$BF|K\\%1B(B&r=%1B$B%%22%1B(J\\x%1B(B');
  assert.equal(encodeHrefQuery('/s?q=a😀b', 'ISO-2022-JP'), '/s?q=a%26%23128512%3Bb');
  assert.equal(encodeHrefQuery('/s?q=日😀', 'ISO-2022-JP'), '/s?q=%1B$BF|%1B(B%26%23128512%3B');
});

test('what the ISO-2022-JP encoder writes decodes back to the text, ASCII included', () => {
  const text = '日本語のテキスト、ｶﾀｶﾅ and ASCII ¥100 ‾ 漢字';
  const encoded = encodeHrefQuery(`/s?${text}`, 'ISO-2022-JP').slice(3);
  const bytes = Buffer.from(
    encoded.replace(/%([0-9A-F]{2})/g, (_, h: string) => String.fromCharCode(parseInt(h, 16))),
    'latin1',
  );
  assert.equal(new TextDecoder('iso-2022-jp').decode(bytes), text.replace('ｶﾀｶﾅ', 'カタカナ').replaceAll(' ', ' '));
});
