import { percentByte } from './percent-encode.js';

const ESC = 0x1b;
type State = 'ascii' | 'roman' | 'jis0208';
const SWITCH: Record<State, readonly number[]> = {
  ascii: [ESC, 0x28, 0x42], // ESC ( B
  roman: [ESC, 0x28, 0x4a], // ESC ( J
  jis0208: [ESC, 0x24, 0x42], // ESC $ B
};

/**
 * A query percent-encoded after encoding it in ISO-2022-JP, by the Encoding Standard's
 * ISO-2022-JP encoder: ASCII, JIS X 0201 Roman (for ¥ and ‾) and JIS X 0208 (`jis0208`: code point
 * → two bytes 0x21–0x7E, packed), switched by escape sequences and back to ASCII at the end;
 * half-width katakana as their full-width forms. A character it lacks is `%26%23NNNN%3B`.
 * Unlike the other encodings, ASCII characters go through the encoder: after JIS X 0208 they need
 * the escape back to ASCII.
 */
export function percentEncodeIso2022Jp(query: string, jis0208: ReadonlyMap<number, number>): string {
  let out = '';
  let state: State = 'ascii';
  const emit = (bytes: readonly number[]): void => {
    for (const b of bytes) out += percentByte(b);
  };
  const to = (next: State): void => {
    if (state !== next) emit(SWITCH[next]);
    state = next;
  };
  for (const ch of query) {
    let cp = ch.codePointAt(0)!;
    if (cp >= 0xd800 && cp <= 0xdfff) cp = 0xfffd;
    if (cp === 0x0e || cp === 0x0f || cp === ESC) {
      to('ascii');
      out += '%26%2365533%3B';
      continue;
    }
    if (cp < 0x80 && (state === 'ascii' || (state === 'roman' && cp !== 0x5c && cp !== 0x7e))) {
      emit([cp]);
      continue;
    }
    if (cp < 0x80) {
      to('ascii');
      emit([cp]);
      continue;
    }
    if (cp === 0xa5 || cp === 0x203e) {
      to('roman');
      emit([cp === 0xa5 ? 0x5c : 0x7e]);
      continue;
    }
    if (cp === 0x2212) cp = 0xff0d;
    if (cp >= 0xff61 && cp <= 0xff9f) cp = fullWidthKatakana(cp);
    const packed = jis0208.get(cp);
    if (packed === undefined) {
      to('ascii');
      out += `%26%23${cp}%3B`;
      continue;
    }
    to('jis0208');
    emit([packed >>> 8, packed & 0xff]);
  }
  to('ascii');
  return out;
}

/** index-iso-2022-jp-katakana: NFKC's full-width form, but the standalone (not combining) sound marks. */
function fullWidthKatakana(cp: number): number {
  const full = String.fromCodePoint(cp).normalize('NFKC').codePointAt(0)!;
  return full === 0x3099 ? 0x309b : full === 0x309a ? 0x309c : full;
}
