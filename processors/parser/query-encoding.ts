import { TextDecoder } from 'node:util';
import { WINDOWS_1252_80_9F } from './charset.js';
import { SINGLE_BYTE_ENCODINGS } from './encoding-labels.js';
import { percentEncodeIso2022Jp } from './iso-2022-jp.js';
import { percentByte } from './percent-encode.js';

/**
 * The WHATWG URL parser's encoding override: in a page that is not UTF-8, the query of an
 * http(s) URL is percent-encoded in the page's encoding (browsers send `?q=%93%FA` from a
 * Shift_JIS page where a UTF-8 page sends `?q=%E6%97%A5`); the path stays UTF-8. Node's URL
 * parser only knows UTF-8, so `encodeHrefQuery` rewrites the query of an href before it is
 * parsed: each non-ASCII character becomes its bytes in the page's encoding, percent-encoded
 * (bytes outside ASCII, and ASCII bytes in the query percent-encode set); a character the
 * encoding cannot represent becomes `%26%23NNNN%3B` (`&#NNNN;`), as the standard says.
 *
 * Node has decoders for every legacy encoding but no encoder, so each encoder is a reverse table
 * built once, lazily, by decoding every byte sequence of the encoding's table and keeping the
 * sequence the standard's encoder picks (the first pointer, save the standard's exceptions).
 */

/** `href` with its query encoded for a page in `encoding`; unchanged for UTF-8 pages and ASCII queries. */
export function encodeHrefQuery(href: string, encoding: string): string {
  const q = href.indexOf('?');
  if (q === -1) return href;
  let end = href.indexOf('#', q);
  if (end === -1) end = href.length;
  let ascii = true;
  for (let i = q + 1; i < end && ascii; i++) ascii = href.charCodeAt(i) < 0x80;
  if (ascii) return href;
  // the fragment cannot hold the query's `?`: an earlier `#` means there is no query
  const hash = href.indexOf('#');
  if (hash !== -1 && hash < q) return href;
  const query = href.slice(q + 1, end);
  if (encoding === 'ISO-2022-JP')
    return href.slice(0, q + 1) + percentEncodeIso2022Jp(query, jis0208()) + href.slice(end);
  const encoder = encoderFor(encoding);
  if (encoder === undefined) return href;
  return href.slice(0, q + 1) + percentEncode(query, encoder) + href.slice(end);
}

/** One code point's bytes in an encoding, or undefined when the encoding cannot represent it. */
type Encoder = (codePoint: number) => readonly number[] | undefined;

function percentEncode(query: string, encoder: Encoder): string {
  let out = '';
  for (const ch of query) {
    let cp = ch.codePointAt(0)!;
    if (cp < 0x80) {
      out += ch; // the URL parser encodes ASCII itself, exactly as in a UTF-8 page
      continue;
    }
    // a lone surrogate is not a scalar value: the standard's USVString conversion makes it U+FFFD
    if (cp >= 0xd800 && cp <= 0xdfff) cp = 0xfffd;
    const bytes = encoder(cp);
    if (bytes === undefined) {
      out += `%26%23${cp}%3B`;
      continue;
    }
    for (const b of bytes) out += percentByte(b);
  }
  return out;
}

const encoders = new Map<string, Encoder | undefined>();

/** The encoder of an encoding's URL queries; undefined when queries are UTF-8 (UTF-8, UTF-16, replacement). */
export function encoderFor(encoding: string): Encoder | undefined {
  if (!encoders.has(encoding)) encoders.set(encoding, buildEncoder(encoding));
  return encoders.get(encoding);
}

function buildEncoder(encoding: string): Encoder | undefined {
  if (SINGLE_BYTE_ENCODINGS.has(encoding)) return singleByte(encoding);
  switch (encoding) {
    case 'Shift_JIS':
      return shiftJis();
    case 'EUC-JP':
      return eucJp();
    case 'EUC-KR':
      return fromTable(doubleByteTable('euc-kr', [0x81, 0xfe], [[0x41, 0xfe]], 0));
    case 'Big5':
      return big5();
    case 'GBK':
      return gb18030(true);
    case 'gb18030':
      return gb18030(false);
    case 'x-user-defined':
      return (cp) => (cp >= 0xf780 && cp <= 0xf7ff ? [cp - 0xf780 + 0x80] : undefined);
    // ISO-2022-JP's encoder is stateful (escape sequences): see iso-2022-jp.ts
    default:
      return undefined;
  }
}

/** code point → bytes packed big-endian in a number (1 or 2 bytes). */
type Table = Map<number, number>;

function fromTable(table: Table): Encoder {
  return (cp) => {
    const packed = table.get(cp);
    if (packed === undefined) return undefined;
    return packed > 0xff ? [packed >>> 8, packed & 0xff] : [packed];
  };
}

function decoder(encoding: string): TextDecoder | undefined {
  try {
    return new TextDecoder(encoding);
  } catch {
    return undefined;
  }
}

function singleByte(encoding: string): Encoder | undefined {
  let text: string;
  if (encoding === 'windows-1252') {
    // not Node's decoder: it has ISO-8859-1 at 0x80–0x9F (see charset.ts)
    text = String.fromCharCode(...Array.from({ length: 0x80 }, (_, b) => b)) + WINDOWS_1252_80_9F;
    text += String.fromCharCode(...Array.from({ length: 0x60 }, (_, b) => b + 0xa0));
  } else {
    const d = decoder(encoding);
    if (d === undefined) return undefined;
    text = d.decode(Uint8Array.from({ length: 256 }, (_, b) => b));
  }
  const table: Table = new Map();
  for (let b = 0x80; b < 0x100; b++) {
    const cp = text.charCodeAt(b);
    if (cp !== 0xfffd && !table.has(cp)) table.set(cp, b);
  }
  return fromTable(table);
}

/**
 * Every two-byte sequence `lead trail` (lead in `leads`, trail in `trails`) decoded alone, in
 * byte order; the first sequence that decodes to one code point wins, skipping those for which
 * `skip(lead, trail)` is true. Single bytes 0x80–0xFF that decode alone come first.
 */
function doubleByteTable(
  encoding: string,
  leads: readonly [number, number],
  trails: readonly (readonly [number, number])[],
  singlesFrom: number,
  skip?: (lead: number, trail: number) => boolean,
  preferLast?: ReadonlySet<number>,
): Table {
  const d = decoder(encoding)!;
  const table: Table = new Map();
  const pair = new Uint8Array(2);
  if (singlesFrom > 0) {
    for (let b = singlesFrom; b < 0x100; b++) {
      const s = d.decode(Uint8Array.of(b));
      if (s.length === 1 && s !== '\uFFFD' && !table.has(s.charCodeAt(0))) table.set(s.charCodeAt(0), b);
    }
  }
  for (let lead = leads[0]; lead <= leads[1]; lead++) {
    for (const [from, to] of trails) {
      for (let trail = from; trail <= to; trail++) {
        if (skip?.(lead, trail)) continue;
        pair[0] = lead;
        pair[1] = trail;
        const s = d.decode(pair);
        const cp = s.codePointAt(0)!;
        // one code point from both bytes (not a lone lead's U+FFFD followed by the trail)
        if (cp === 0xfffd || s.length !== (cp > 0xffff ? 2 : 1)) continue;
        if (!table.has(cp) || preferLast?.has(cp)) table.set(cp, (lead << 8) | trail);
      }
    }
  }
  return table;
}

function shiftJis(): Encoder {
  const trails = [
    [0x40, 0x7e],
    [0x80, 0xfc],
  ] as const;
  const pointer = (lead: number, trail: number): number =>
    (lead - (lead < 0xa0 ? 0x81 : 0xc1)) * 188 + trail - (trail < 0x7f ? 0x40 : 0x41);
  // the standard's "index Shift_JIS pointer" excludes pointers 8272–8835 (duplicates of IBM extensions)
  const skip = (lead: number, trail: number): boolean => {
    const p = pointer(lead, trail);
    return (lead > 0x9f && lead < 0xe0) || (p >= 8272 && p <= 8835);
  };
  const table = doubleByteTable('shift_jis', [0x81, 0xfc], trails, 0xa1, skip);
  table.set(0x80, 0x80);
  return jisSpecials(fromTable(table));
}

let jis0208Table: Map<number, number> | undefined;

/** code point → JIS X 0208 row and cell as two bytes 0x21–0x7E (packed), from the EUC-JP table. */
function jis0208(): Map<number, number> {
  if (jis0208Table === undefined) {
    jis0208Table = new Map();
    for (const [cp, packed] of doubleByteTable('euc-jp', [0xa1, 0xfe], [[0xa1, 0xfe]], 0))
      jis0208Table.set(cp, packed - 0x8080);
  }
  return jis0208Table;
}

function eucJp(): Encoder {
  const table = doubleByteTable('euc-jp', [0xa1, 0xfe], [[0xa1, 0xfe]], 0);
  for (let cp = 0xff61; cp <= 0xff9f; cp++) table.set(cp, 0x8e00 | (cp - 0xff61 + 0xa1));
  return jisSpecials(fromTable(table));
}

/** What the standard's Shift_JIS and EUC-JP encoders do before consulting the index. */
function jisSpecials(encode: Encoder): Encoder {
  return (cp) => {
    if (cp === 0xa5) return [0x5c];
    if (cp === 0x203e) return [0x7e];
    return encode(cp === 0x2212 ? 0xff0d : cp);
  };
}

function big5(): Encoder {
  // the standard's "index Big5 pointer": no HKSCS pointers (leads below 0xA1), and the last
  // pointer for six code points the index lists twice
  const table = doubleByteTable(
    'big5',
    [0xa1, 0xfe],
    [
      [0x40, 0x7e],
      [0xa1, 0xfe],
    ],
    0,
    undefined,
    new Set([0x2550, 0x255e, 0x2561, 0x256a, 0x5341, 0x5345]),
  );
  return fromTable(table);
}

/** GBK is gb18030 without four-byte sequences (its encoder fails where gb18030 uses them), and € as 0x80. */
function gb18030(gbk: boolean): Encoder {
  const trails = [
    [0x40, 0x7e],
    [0x80, 0xfe],
  ] as const;
  const two = fromTable(doubleByteTable(gbk ? 'gbk' : 'gb18030', [0x81, 0xfe], trails, 0));
  let four: Map<number, number> | undefined;
  return (cp) => {
    if (cp === 0xe5e5) return undefined;
    if (gbk && cp === 0x20ac) return [0x80];
    const bytes = two(cp);
    if (bytes !== undefined || gbk) return bytes;
    if (cp > 0xffff) return fourBytes(189000 + cp - 0x10000);
    four ??= gb18030FourByteBmp();
    const pointer = four.get(cp);
    return pointer === undefined ? undefined : fourBytes(pointer);
  };
}

function fourBytes(pointer: number): number[] {
  const b1 = Math.floor(pointer / 12600);
  const b2 = Math.floor((pointer % 12600) / 1260);
  const b3 = Math.floor((pointer % 1260) / 10);
  return [b1 + 0x81, b2 + 0x30, b3 + 0x81, (pointer % 10) + 0x30];
}

/** code point → gb18030 four-byte pointer, for the BMP (pointers 0–39419), by decoding each sequence. */
function gb18030FourByteBmp(): Map<number, number> {
  const d = new TextDecoder('gb18030');
  const map = new Map<number, number>();
  for (let pointer = 0; pointer < 39420; pointer++) {
    const s = d.decode(Uint8Array.from(fourBytes(pointer)));
    const cp = s.charCodeAt(0);
    if (s.length === 1 && cp !== 0xfffd && !map.has(cp)) map.set(cp, pointer);
  }
  return map;
}
