import { isAscii, isUtf8 } from 'node:buffer';
import { TextDecoder } from 'node:util';
import { encodingForLabel } from './encoding-labels.js';

/** Where a page's encoding came from, in the order the HTML standard's sniffing algorithm tries them. */
export type CharsetSource = 'bom' | 'header' | 'meta' | 'xml' | 'detected' | 'default';

export interface SniffedCharset {
  /** The WHATWG name of the encoding the body is decoded with (`UTF-8`, `windows-1252`, `Shift_JIS`, …). */
  encoding: string;
  source: CharsetSource;
  /** Bytes of byte order mark to skip (0 unless `source` is `bom`). */
  bomLength: number;
}

/** How many bytes the meta prescan looks at (HTML: "prescan a byte stream to determine its encoding"). */
export const PRESCAN_BYTES = 1024;

/**
 * The encoding of an HTML body, by the HTML standard's encoding sniffing algorithm:
 *
 * 1. a byte order mark (UTF-8, UTF-16BE, UTF-16LE) wins over everything;
 * 2. the `charset` parameter of the Content-Type header, when it names an encoding;
 * 3. `<meta charset>` or `<meta http-equiv=Content-Type content="…charset=…">` in the first
 *    PRESCAN_BYTES bytes (comments skipped; a UTF-16 label there means UTF-8, x-user-defined
 *    means windows-1252, as the standard says);
 * 4. the standard's optional autodetection step, limited to the one verdict that cannot be wrong
 *    in practice: a body with non-ASCII bytes that is valid UTF-8 throughout is UTF-8;
 * 5. windows-1252, the default for an undeclared page.
 *
 * XHTML served as `application/xhtml+xml` is XML: after the BOM and the header, its
 * `<?xml … encoding="…"?>` declaration, else UTF-8.
 *
 * An encoding this Node cannot decode (ISO-8859-16 has no ICU converter) is reported, and
 * decoded, as windows-1252.
 * `body` is the response body after Content-Encoding is undone. Never throws.
 */
export function sniffCharset(body: Uint8Array, contentType: string | null): SniffedCharset {
  const bom = bomEncoding(body);
  if (bom !== undefined) return { encoding: bom.encoding, source: 'bom', bomLength: bom.length };
  const declared = contentType === null ? undefined : charsetParameter(contentType);
  const fromHeader = declared === undefined ? undefined : encodingForLabel(declared);
  if (fromHeader !== undefined) return { encoding: decodable(fromHeader), source: 'header', bomLength: 0 };
  // XHTML served as XML is read by the XML rules: its declaration, else UTF-8; a <meta> does not count
  if (contentType !== null && XML_MIME.test(contentType)) return xmlDeclared(body);
  const fromMeta = prescanForEncoding(body);
  if (fromMeta !== undefined) return { encoding: decodable(fromMeta), source: 'meta', bomLength: 0 };
  if (isNonAsciiUtf8(body)) return { encoding: 'UTF-8', source: 'detected', bomLength: 0 };
  return { encoding: 'windows-1252', source: 'default', bomLength: 0 };
}

/**
 * The encoding of an XML document (sitemaps, feeds), by RFC 7303 and XML 1.0 appendix F: a byte
 * order mark, else the `charset` parameter of the Content-Type header, else the encoding the
 * `<?xml … encoding="…"?>` declaration names, else UTF-8. Never throws.
 */
export function sniffXmlCharset(body: Uint8Array, contentType: string | null): SniffedCharset {
  const bom = bomEncoding(body);
  if (bom !== undefined) return { encoding: bom.encoding, source: 'bom', bomLength: bom.length };
  const declared = contentType === null ? undefined : charsetParameter(contentType);
  const fromHeader = declared === undefined ? undefined : encodingForLabel(declared);
  if (fromHeader !== undefined) return { encoding: decodable(fromHeader), source: 'header', bomLength: 0 };
  return xmlDeclared(body);
}

function xmlDeclared(body: Uint8Array): SniffedCharset {
  const fromXml = xmlDeclarationEncoding(body);
  return { encoding: decodable(fromXml ?? 'UTF-8'), source: fromXml ? 'xml' : 'default', bomLength: 0 };
}

/**
 * `body` decoded in `sniffed.encoding`, malformed sequences as U+FFFD (the standard's "decode").
 * UTF-8 goes straight from the buffer to a string, as before charsets were sniffed: no copy.
 */
export function decodeHtml(body: Buffer, sniffed: SniffedCharset): string {
  const { encoding, bomLength } = sniffed;
  if (encoding === 'UTF-8') return body.toString('utf8', bomLength);
  if (encoding === 'windows-1252') return decodeWindows1252(body);
  if (encoding === 'x-user-defined') return decodeUserDefined(body);
  if (encoding === 'replacement') return body.length === 0 ? '' : '\uFFFD';
  return decoderFor(encoding).decode(bomLength === 0 ? body : body.subarray(bomLength));
}

/**
 * What windows-1252 has at 0x80–0x9F, where ISO-8859-1 has C1 controls (index-windows-1252).
 * Node 20's TextDecoder decodes windows-1252 as ISO-8859-1 (0x80 as U+0080, not €), so this
 * decoder is ours: Latin-1, then this range mapped.
 */
export const WINDOWS_1252_80_9F =
  '\u20ac\u0081\u201a\u0192\u201e\u2026\u2020\u2021\u02c6\u2030\u0160\u2039\u0152\u008d\u017d\u008f' +
  '\u0090\u2018\u2019\u201c\u201d\u2022\u2013\u2014\u02dc\u2122\u0161\u203a\u0153\u009d\u017e\u0178';

const C1 = /[\x80-\x9f]/g;

function decodeWindows1252(body: Buffer): string {
  const latin1 = body.toString('latin1');
  if (isAscii(body)) return latin1;
  return latin1.replace(C1, (c) => WINDOWS_1252_80_9F[c.charCodeAt(0) - 0x80]!);
}

const XML_MIME = /^\s*application\/xhtml\+xml/i;
const XML_DECLARATION = /^<\?xml[\t\n\r ][^>]*?encoding[\t\n\r ]*=[\t\n\r ]*(["'])([A-Za-z][A-Za-z0-9._-]*)\1/;

/** The encoding an XML declaration at the start of `body` names, when it names one the standard knows. */
function xmlDeclarationEncoding(body: Uint8Array): string | undefined {
  const head = Buffer.from(body.buffer, body.byteOffset, Math.min(body.byteLength, 200)).toString('latin1');
  const label = XML_DECLARATION.exec(head)?.[2];
  return label === undefined ? undefined : encodingForLabel(label);
}

function decodable(encoding: string): string {
  if (
    encoding === 'UTF-8' ||
    encoding === 'windows-1252' ||
    encoding === 'x-user-defined' ||
    encoding === 'replacement'
  )
    return encoding;
  return decoderFor(encoding) === FALLBACK_DECODER ? 'windows-1252' : encoding;
}

// a marker only: decodable() turns an encoding that gets it into windows-1252, decoded by decodeWindows1252
const FALLBACK_DECODER = new TextDecoder('windows-1252', { ignoreBOM: true });
const decoders = new Map<string, TextDecoder>();

function decoderFor(encoding: string): TextDecoder {
  let decoder = decoders.get(encoding);
  if (decoder === undefined) {
    try {
      // the BOM, when there was one, is already skipped: a second one is content
      decoder = new TextDecoder(encoding, { ignoreBOM: true });
    } catch {
      decoder = FALLBACK_DECODER;
    }
    decoders.set(encoding, decoder);
  }
  return decoder;
}

/**
 * Valid UTF-8 with non-ASCII characters — but for a character cut in two at the end (a body
 * truncated at the fetch cap), as long as some non-ASCII character before it is whole.
 */
function isNonAsciiUtf8(body: Uint8Array): boolean {
  if (isAscii(body)) return false;
  let start = body.length;
  // back over up to 3 continuation bytes to the lead byte of the last character
  while (start > 0 && body.length - start < 3 && (body[start - 1]! & 0xc0) === 0x80) start--;
  const lead = start > 0 ? body[start - 1]! : 0;
  const need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
  const cut = need > body.length - start + 1 ? start - 1 : body.length;
  if (cut === body.length) return isUtf8(body);
  const whole = body.subarray(0, cut);
  return !isAscii(whole) && isUtf8(whole);
}

function decodeUserDefined(body: Uint8Array): string {
  let out = '';
  for (let i = 0; i < body.length; i += 8192) {
    const chunk = Array.from(body.subarray(i, i + 8192), (b) => (b < 0x80 ? b : 0xf780 + b - 0x80));
    out += String.fromCharCode(...chunk);
  }
  return out;
}

function bomEncoding(body: Uint8Array): { encoding: string; length: number } | undefined {
  if (body.length >= 3 && body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf)
    return { encoding: 'UTF-8', length: 3 };
  if (body.length >= 2 && body[0] === 0xfe && body[1] === 0xff) return { encoding: 'UTF-16BE', length: 2 };
  if (body.length >= 2 && body[0] === 0xff && body[1] === 0xfe) return { encoding: 'UTF-16LE', length: 2 };
  return undefined;
}

/**
 * The raw value of the `charset` parameter of a Content-Type value (`text/html; Charset="x-sjis"`
 * → `x-sjis`), unquoted, or undefined. Parameters are `;`-separated `name=value` pairs after the
 * MIME type; a quoted value may hold `;` and backslash escapes (RFC 9110 quoted-string).
 */
export function charsetParameter(contentType: string): string | undefined {
  const re = /;[\t ]*([^\t ;=]+)[\t ]*=[\t ]*("(?:[^"\\]|\\.)*"?|[^;]*)/g;
  const semicolon = contentType.indexOf(';');
  if (semicolon === -1) return undefined;
  re.lastIndex = semicolon;
  for (let m = re.exec(contentType); m !== null; m = re.exec(contentType)) {
    if (m[1]!.toLowerCase() !== 'charset') continue;
    const raw = m[2]!;
    const value = raw.startsWith('"') ? raw.slice(1, raw.endsWith('"') && raw.length > 1 ? -1 : undefined) : raw;
    return value.replace(/\\(.)/g, '$1').trim();
  }
  return undefined;
}

/**
 * The HTML standard's "prescan a byte stream to determine its encoding" over the first
 * PRESCAN_BYTES bytes: the encoding of the first `<meta>` that declares one with `charset`, or
 * with `content` plus `http-equiv="content-type"`, outside comments; other tags' attributes are
 * stepped over so a `<meta` inside an attribute value is not mistaken for one. A declaration
 * cut off by the 1,024-byte limit does not count.
 */
export function prescanForEncoding(body: Uint8Array): string | undefined {
  const s = new ByteScanner(body.subarray(0, PRESCAN_BYTES));
  while (s.pos < s.end) {
    // only a `<` starts anything the prescan looks at
    s.pos = s.nextLt();
    if (s.pos === -1) return undefined;
    if (s.startsWith('<!--')) {
      // the `-->` may share its dashes with the `<!--` (`<!-->` is a whole comment)
      const close = s.indexOf('-->', s.pos + 2);
      if (close === -1) return undefined;
      s.pos = close + 3;
    } else if (s.startsWithIgnoreCase('<meta') && isSpaceOrSlash(s.at(s.pos + 5))) {
      s.pos += 6;
      const found = metaEncoding(s);
      if (found === null) return undefined;
      if (found !== undefined) return found;
    } else if (
      s.at(s.pos) === LT &&
      (isAsciiLetter(s.at(s.pos + 1)) || (s.at(s.pos + 1) === SLASH && isAsciiLetter(s.at(s.pos + 2))))
    ) {
      // a start or end tag: skip its name, then its attributes (their values may hold `<meta`)
      while (s.pos < s.end && !isSpace(s.at(s.pos)) && s.at(s.pos) !== GT) s.pos++;
      while (s.attribute(false) !== undefined);
      if (s.pos >= s.end) return undefined;
      s.pos++;
    } else if (s.startsWith('<!') || s.startsWith('</') || s.startsWith('<?')) {
      const gt = s.indexOf('>', s.pos + 2);
      if (gt === -1) return undefined;
      s.pos = gt + 1;
    } else {
      s.pos++;
    }
  }
  return undefined;
}

/** The encoding a `<meta>` declares (attributes read from `s.pos`), undefined if none, null at the end of input. */
function metaEncoding(s: ByteScanner): string | undefined | null {
  const seen = new Set<string>();
  let gotPragma = false;
  let needPragma: boolean | undefined;
  let charset: string | undefined;
  for (let attr = s.attribute(true); attr !== undefined; attr = s.attribute(true)) {
    if (seen.has(attr.name)) continue;
    seen.add(attr.name);
    if (attr.name === 'http-equiv') {
      if (attr.value.toLowerCase() === 'content-type') gotPragma = true;
    } else if (attr.name === 'content') {
      if (charset === undefined) {
        const label = charsetFromMetaContent(attr.value);
        if (label !== undefined) {
          charset = encodingForLabel(label);
          needPragma = true;
        }
      }
    } else if (attr.name === 'charset') {
      charset = encodingForLabel(attr.value);
      needPragma = false;
    }
  }
  // an attribute list cut off by the 1,024-byte limit may not have been read whole
  if (s.pos >= s.end) return null;
  if (needPragma === undefined || (needPragma && !gotPragma) || charset === undefined) return undefined;
  if (charset === 'UTF-16BE' || charset === 'UTF-16LE') return 'UTF-8';
  if (charset === 'x-user-defined') return 'windows-1252';
  return charset;
}

/** HTML: "extracting a character encoding from a meta element" (`text/html; charset=x` → `x`). */
export function charsetFromMetaContent(content: string): string | undefined {
  const lower = content.toLowerCase();
  let from = 0;
  for (;;) {
    const at = lower.indexOf('charset', from);
    if (at === -1) return undefined;
    let i = at + 7;
    while (i < content.length && isSpace(content.charCodeAt(i))) i++;
    if (content[i] !== '=') {
      from = i > at + 7 ? i : at + 7;
      continue;
    }
    i++;
    while (i < content.length && isSpace(content.charCodeAt(i))) i++;
    const quote = content[i];
    if (quote === '"' || quote === "'") {
      const end = content.indexOf(quote, i + 1);
      return end === -1 ? undefined : content.slice(i + 1, end);
    }
    if (i >= content.length) return undefined;
    let end = i;
    while (end < content.length && !isSpace(content.charCodeAt(end)) && content[end] !== ';') end++;
    return content.slice(i, end);
  }
}

const LT = 0x3c;
const GT = 0x3e;
const SLASH = 0x2f;
const EQ = 0x3d;

function isSpace(c: number | undefined): boolean {
  return c === 0x09 || c === 0x0a || c === 0x0c || c === 0x0d || c === 0x20;
}
function isSpaceOrSlash(c: number | undefined): boolean {
  return isSpace(c) || c === SLASH;
}
function isAsciiLetter(c: number | undefined): boolean {
  return c !== undefined && ((c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a));
}

/** A cursor over the prescan's bytes, with the standard's "get an attribute". */
class ByteScanner {
  pos = 0;
  readonly end: number;
  constructor(private readonly bytes: Uint8Array) {
    this.end = bytes.length;
  }

  at(i: number): number | undefined {
    return i < this.end ? this.bytes[i] : undefined;
  }

  /** Position of the next `<` from `pos`, or -1. */
  nextLt(): number {
    return this.bytes.indexOf(LT, this.pos);
  }

  startsWith(ascii: string): boolean {
    for (let k = 0; k < ascii.length; k++) if (this.at(this.pos + k) !== ascii.charCodeAt(k)) return false;
    return true;
  }

  startsWithIgnoreCase(asciiLower: string): boolean {
    for (let k = 0; k < asciiLower.length; k++) {
      const c = this.at(this.pos + k);
      if (c === undefined || (c | (isAsciiLetter(c) ? 0x20 : 0)) !== asciiLower.charCodeAt(k)) return false;
    }
    return true;
  }

  indexOf(ascii: string, from: number): number {
    for (let i = from; i + ascii.length <= this.end; i++) {
      let k = 0;
      while (k < ascii.length && this.bytes[i + k] === ascii.charCodeAt(k)) k++;
      if (k === ascii.length) return i;
    }
    return -1;
  }

  /**
   * HTML "get an attribute": the next attribute's lowercased name and value (as Latin-1 text: only
   * ASCII matters here), or undefined at `>` or the end of input, where `pos` is left. With
   * `keep` false the attribute is only stepped over (name and value come back empty).
   */
  attribute(keep: boolean): { name: string; value: string } | undefined {
    while (isSpaceOrSlash(this.at(this.pos))) this.pos++;
    if (this.pos >= this.end || this.at(this.pos) === GT) return undefined;
    const start = this.pos;
    for (;;) {
      const c = this.at(this.pos);
      if (c === undefined || c === SLASH || c === GT) return { name: this.name(start, keep), value: '' };
      // a leading `=` is part of the name
      if (c === EQ && this.pos > start) {
        const name = this.name(start, keep);
        this.pos++;
        return { name, value: this.attributeValue(keep) };
      }
      if (isSpace(c)) {
        const name = this.name(start, keep);
        while (isSpace(this.at(this.pos))) this.pos++;
        if (this.at(this.pos) !== EQ) return { name, value: '' };
        this.pos++;
        return { name, value: this.attributeValue(keep) };
      }
      this.pos++;
    }
  }

  private name(start: number, keep: boolean): string {
    return keep ? latin1Lower(this.bytes.subarray(start, this.pos)) : '';
  }

  private attributeValue(keep: boolean): string {
    while (isSpace(this.at(this.pos))) this.pos++;
    const first = this.at(this.pos);
    if (first === 0x22 || first === 0x27) {
      const start = ++this.pos;
      const close = this.bytes.indexOf(first, start);
      this.pos = close === -1 ? this.end : close;
      const value = keep ? latin1Lower(this.bytes.subarray(start, this.pos)) : '';
      if (this.pos < this.end) this.pos++;
      return value;
    }
    if (first === GT) return '';
    const start = this.pos;
    while (this.pos < this.end && !isSpace(this.bytes[this.pos]) && this.bytes[this.pos] !== GT) this.pos++;
    return keep ? latin1Lower(this.bytes.subarray(start, this.pos)) : '';
  }
}

/** Attribute values are compared ASCII case-insensitively; only ASCII letters are lowered. */
function latin1Lower(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
    .toString('latin1')
    .replace(/[A-Z]/g, (c) => c.toLowerCase());
}
