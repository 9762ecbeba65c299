import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  PRESCAN_BYTES,
  charsetFromMetaContent,
  charsetParameter,
  decodeHtml,
  prescanForEncoding,
  sniffCharset,
} from '../../../processors/parser/charset.js';
import { encodingForLabel } from '../../../processors/parser/encoding-labels.js';

const latin1 = (s: string): Buffer => Buffer.from(s, 'latin1');
const sniff = (body: Buffer, contentType: string | null = 'text/html') => sniffCharset(body, contentType);

test('labels map to WHATWG encodings: latin1, iso-8859-1 and ascii are windows-1252, x-sjis Shift_JIS, gb2312 GBK', () => {
  const cases: [string, string | undefined][] = [
    ['latin1', 'windows-1252'],
    ['ISO-8859-1', 'windows-1252'],
    ['us-ascii', 'windows-1252'],
    ['ascii', 'windows-1252'],
    ['x-sjis', 'Shift_JIS'],
    ['windows-31j', 'Shift_JIS'],
    ['gb2312', 'GBK'],
    ['GB_2312-80', 'GBK'],
    ['gb18030', 'gb18030'],
    ['  utf8\t', 'UTF-8'],
    ['utf-16', 'UTF-16LE'],
    ['ks_c_5601-1987', 'EUC-KR'],
    ['iso-2022-kr', 'replacement'],
    ['tis-620', 'windows-874'],
    ['utf-7', undefined],
    ['\u212Aoi8-r', undefined], // KELVIN SIGN is not an ASCII K
    ['', undefined],
  ];
  for (const [label, name] of cases) assert.equal(encodingForLabel(label), name, label);
});

test('the Content-Type charset parameter is read quoted or not, in any case, among other parameters', () => {
  assert.equal(charsetParameter('text/html; charset=Shift_JIS'), 'Shift_JIS');
  assert.equal(charsetParameter('text/html;CHARSET="x-sjis"'), 'x-sjis');
  assert.equal(charsetParameter('text/html; q="a;b"; charset = gbk ; x=1'), 'gbk');
  assert.equal(charsetParameter('text/html'), undefined);
  assert.equal(charsetParameter('text/html; charsetx=gbk'), undefined);
});

test('a byte order mark wins over the header and the meta, and is not part of the text', () => {
  const body = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('<meta charset="gbk">café', 'utf8')]);
  const s = sniff(body, 'text/html; charset=windows-1252');
  assert.deepEqual(s, { encoding: 'UTF-8', source: 'bom', bomLength: 3 });
  assert.equal(decodeHtml(body, s), '<meta charset="gbk">café');
  const le = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('hé', 'utf16le')]);
  assert.equal(decodeHtml(le, sniff(le, 'text/html; charset=utf-8')), 'hé');
});

test('the header charset wins over a meta declaration; an unknown header label falls through to the meta', () => {
  const body = latin1('<meta charset="utf-8"><p>caf\xe9');
  assert.deepEqual(sniff(body, 'text/html; charset=iso-8859-1'), {
    encoding: 'windows-1252',
    source: 'header',
    bomLength: 0,
  });
  assert.equal(sniff(latin1('<meta charset="gbk">'), 'text/html; charset=klingon').encoding, 'GBK');
});

test('the prescan finds meta charset, and http-equiv content-type with content, attributes in any order and quoting', () => {
  const found: [string, string | undefined][] = [
    ['<meta charset="Shift_JIS">', 'Shift_JIS'],
    ["<META CHARSET='x-sjis'>", 'Shift_JIS'],
    ['<meta charset=gb2312>', 'GBK'],
    ['<meta name=x charset = latin1 / >', 'windows-1252'],
    ['<meta http-equiv="Content-Type" content="text/html; charset=euc-jp">', 'EUC-JP'],
    ['<meta content="text/html;charset=\'big5\'" http-equiv=content-type>', 'Big5'],
    ['<meta\tcontent=text/html;charset=koi8-r http-equiv="CONTENT-TYPE">', 'KOI8-R'],
    // content without http-equiv content-type declares nothing
    ['<meta content="text/html; charset=gbk">', undefined],
    ['<meta http-equiv="refresh" content="0; charset=gbk">', undefined],
    // the first charset attribute counts; repeated attributes are ignored
    ['<meta charset="bogus" charset="gbk"><meta charset="big5">', 'Big5'],
    // a UTF-16 meta means UTF-8 (the bytes are ASCII-compatible if the prescan read it); x-user-defined is windows-1252
    ['<meta charset="utf-16le">', 'UTF-8'],
    ['<meta charset="x-user-defined">', 'windows-1252'],
    ['<head><title>t</title><meta charset="iso-8859-2">', 'ISO-8859-2'],
    ['<metadata charset="gbk">', undefined],
  ];
  for (const [html, name] of found) assert.equal(prescanForEncoding(latin1(html)), name, html);
});

test('the prescan ignores a meta inside a comment, inside another tag, in a processing instruction or beyond 1024 bytes', () => {
  const ignored = [
    '<!-- <meta charset="gbk"> -->',
    '<!-- a -- b <meta charset="gbk"> -->',
    '<div title="<meta charset=gbk>">',
    "<a href='x' data-x='<meta charset=\"gbk\">'>",
    '<? <meta charset="gbk"> ?>',
    '<!doctype html <meta charset="gbk">>',
  ];
  for (const html of ignored) assert.equal(prescanForEncoding(latin1(html)), undefined, html);
  // after those, a real one is found
  assert.equal(prescanForEncoding(latin1(ignored.join('') + '<meta charset="big5">')), 'Big5');
  // `<!-->` is a whole comment
  assert.equal(prescanForEncoding(latin1('<!--><meta charset="big5">')), 'Big5');

  const meta = '<meta charset="Shift_JIS">';
  const atEdge = ' '.repeat(PRESCAN_BYTES - meta.length) + meta;
  assert.equal(prescanForEncoding(latin1(atEdge)), 'Shift_JIS', 'a meta ending at byte 1024 counts');
  assert.equal(prescanForEncoding(latin1(' ' + atEdge)), undefined, 'a meta cut by the 1024-byte limit does not');
  assert.equal(prescanForEncoding(latin1(' '.repeat(2000) + meta)), undefined);
  assert.equal(sniff(latin1(' '.repeat(2000) + meta + 'caf\xe9')).encoding, 'windows-1252');
});

test('extracting the charset from a meta content value follows the HTML algorithm', () => {
  assert.equal(charsetFromMetaContent('text/html; charset=gbk'), 'gbk');
  assert.equal(charsetFromMetaContent('text/html; CHARSET = "big5" ; x'), 'big5');
  assert.equal(charsetFromMetaContent('charsetcharset=koi8-r;'), 'koi8-r');
  assert.equal(charsetFromMetaContent('text/html; charset="gbk'), undefined, 'an unmatched quote');
  assert.equal(charsetFromMetaContent('text/html; charset='), undefined);
  assert.equal(charsetFromMetaContent('text/html'), undefined);
});

test('an undeclared page is windows-1252, unless it is valid UTF-8 with non-ASCII bytes', () => {
  assert.deepEqual(sniff(latin1('<p>caf\xe9 \x80 5')), { encoding: 'windows-1252', source: 'default', bomLength: 0 });
  assert.deepEqual(sniff(Buffer.from('<p>café', 'utf8')), { encoding: 'UTF-8', source: 'detected', bomLength: 0 });
  assert.equal(sniff(latin1('<p>plain ascii'), null).encoding, 'windows-1252');
  // a UTF-8 body cut in the middle of a character by the size cap is still UTF-8
  const cut = Buffer.from('<p>日本', 'utf8');
  assert.equal(sniff(cut.subarray(0, cut.length - 1)).encoding, 'UTF-8');
  assert.equal(sniff(cut.subarray(0, cut.length - 2)).encoding, 'UTF-8');
  // but a lone Latin-1 letter at the very end is no cut UTF-8 character
  assert.equal(sniff(latin1('<p>caf\xe9')).encoding, 'windows-1252');
});

test('windows-1252 decodes 0x80-0x9F to the characters it has there, not to C1 controls', () => {
  const body = Buffer.from([0x80, 0x85, 0x8a, 0x8c, 0x91, 0x92, 0x93, 0x94, 0x96, 0x97, 0x99, 0x9f, 0x81, 0xe9, 0x41]);
  assert.equal(decodeHtml(body, sniff(body, 'text/html; charset=latin1')), '€…ŠŒ‘’“”–—™Ÿ\u0081éA');
});

test('Shift_JIS and GBK decode their two-byte characters (known byte values)', () => {
  const sjis = Buffer.from([0x93, 0xfa, 0x96, 0x7b, 0x8c, 0xea, 0xb1]); // 日本語ｱ
  assert.equal(decodeHtml(sjis, sniff(sjis, 'text/html; charset=sjis')), '日本語ｱ');
  const gbk = Buffer.from([0xd6, 0xd0, 0xce, 0xc4, 0x80]); // 中文€
  assert.equal(decodeHtml(gbk, sniff(gbk, 'text/html; charset=gb2312')), '中文€');
});

test('XHTML served as XML takes its encoding from the XML declaration, else UTF-8, never from a meta', () => {
  const xhtml = 'application/xhtml+xml';
  assert.deepEqual(sniff(latin1('<?xml version="1.0" encoding="Shift_JIS"?><html/>'), xhtml), {
    encoding: 'Shift_JIS',
    source: 'xml',
    bomLength: 0,
  });
  assert.deepEqual(sniff(latin1('<html><meta charset="gbk"/><p>caf\xe9</p></html>'), xhtml), {
    encoding: 'UTF-8',
    source: 'default',
    bomLength: 0,
  });
  assert.equal(sniff(latin1('<?xml version="1.0" encoding="euc-jp"?>'), `${xhtml}; charset=gbk`).encoding, 'GBK');
});
