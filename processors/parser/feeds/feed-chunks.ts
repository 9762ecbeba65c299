import { TextDecoder } from 'node:util';
import { decodeHtml, type SniffedCharset } from '../charset.js';

// the unit of decoding and parsing: a document is never held as one string
const CHUNK_BYTES = 64 * 1024;

/**
 * `body` decoded in `sniffed.encoding` as a sequence of strings of at most CHUNK_BYTES bytes
 * each, a character cut by a chunk boundary completed in the next; malformed sequences as U+FFFD.
 * The consumer may stop early: nothing past the chunk it holds is decoded.
 */
export function* decodedChunks(body: Buffer, sniffed: SniffedCharset): Generator<string, void, undefined> {
  const { encoding, bomLength } = sniffed;
  if (encoding === 'windows-1252' || encoding === 'x-user-defined') {
    // single-byte encodings: each chunk decodes on its own, with the Latin-1 fast path of charset.ts
    for (let i = bomLength; i < body.length; i += CHUNK_BYTES) {
      yield decodeHtml(body.subarray(i, i + CHUNK_BYTES), { ...sniffed, bomLength: 0 });
    }
    return;
  }
  let decoder: TextDecoder;
  try {
    // the BOM, when there was one, is skipped by offset: a second one is content
    decoder = new TextDecoder(encoding, { ignoreBOM: true });
  } catch {
    yield decodeHtml(body, sniffed);
    return;
  }
  for (let i = bomLength; i < body.length; i += CHUNK_BYTES) {
    yield decoder.decode(body.subarray(i, i + CHUNK_BYTES), { stream: true });
  }
  const tail = decoder.decode();
  if (tail !== '') yield tail;
}
