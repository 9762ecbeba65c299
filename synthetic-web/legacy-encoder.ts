import { InvalidOptionError } from '../core/errors.js';

/** A legacy encoding the test web can write. */
export type LegacyEncoding = 'windows-1252' | 'Shift_JIS' | 'GBK';

/*
 * The test web's own encoder, for its legacy-encoded pages (charset-pages.ts). Node can decode
 * every legacy encoding but encode none. windows-1252 comes from its table (Latin-1 plus
 * 0x80–0x9F, written out here: Node 20 decodes windows-1252 as ISO-8859-1), Shift_JIS and GBK
 * from reversing Node's decoder over every one- and two-byte sequence. Written apart from the
 * parser's encoders (processors/parser/query-encoding.ts) so each checks the other.
 */

const CP1252_80_9F = '€\u0081‚ƒ„…†‡ˆ‰Š‹Œ\u008dŽ\u008f\u0090‘’“”•–—˜™š›œ\u009džŸ';

const reverseTables = new Map<LegacyEncoding, Map<string, number[]>>();

function reverseTable(encoding: LegacyEncoding): Map<string, number[]> {
  let table = reverseTables.get(encoding);
  if (table !== undefined) return table;
  table = new Map();
  if (encoding === 'windows-1252') {
    for (let b = 0xa0; b < 0x100; b++) table.set(String.fromCharCode(b), [b]);
    for (let b = 0x80; b < 0xa0; b++) table.set(CP1252_80_9F[b - 0x80]!, [b]);
  } else {
    const decoder = new TextDecoder(encoding);
    for (let b = 0x80; b < 0x100; b++) {
      const s = decoder.decode(Uint8Array.of(b));
      if (s.length === 1 && s !== '\uFFFD' && !table.has(s)) table.set(s, [b]);
    }
    for (let lead = 0x81; lead < 0xff; lead++)
      for (let trail = 0x40; trail < 0xff; trail++) {
        const s = decoder.decode(Uint8Array.of(lead, trail));
        if (s.length === 1 && s !== '\uFFFD' && !table.has(s)) table.set(s, [lead, trail]);
      }
  }
  reverseTables.set(encoding, table);
  return table;
}

/** One character's bytes in `encoding`, or undefined if it has none there. */
export function encodeChar(ch: string, encoding: LegacyEncoding): number[] | undefined {
  return reverseTable(encoding).get(ch);
}

/** `text` in `encoding`; throws if a character has no representation there. */
export function encodeLegacy(text: string, encoding: LegacyEncoding): Buffer {
  const bytes: number[] = [];
  for (const ch of text) {
    if (ch.charCodeAt(0) < 0x80) {
      bytes.push(ch.charCodeAt(0));
      continue;
    }
    const encoded = encodeChar(ch, encoding);
    if (encoded === undefined) throw new InvalidOptionError(`${JSON.stringify(ch)} has no ${encoding} representation`);
    bytes.push(...encoded);
  }
  return Buffer.from(bytes);
}
