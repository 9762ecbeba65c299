import zlib from 'node:zlib';

export interface DecodedBody {
  /** Decoded bytes; empty on CS_BOMB and corrupt data, the decodable part of a truncated stream. */
  body: Buffer;
  errorCode?: 'CS_BOMB' | 'CS_PARSE';
  message?: string;
}

/** More stacked codings than this is not a real server. */
const MAX_CODINGS = 4;

type Decoder = (input: Buffer, options: zlib.ZlibOptions | zlib.BrotliOptions) => Buffer;

const DECODERS: Record<string, { decode: Decoder; salvageFlush: number }> = {
  gzip: { decode: zlib.gunzipSync, salvageFlush: zlib.constants.Z_SYNC_FLUSH },
  'x-gzip': { decode: zlib.gunzipSync, salvageFlush: zlib.constants.Z_SYNC_FLUSH },
  deflate: { decode: inflateEither, salvageFlush: zlib.constants.Z_SYNC_FLUSH },
  br: { decode: zlib.brotliDecompressSync, salvageFlush: zlib.constants.BROTLI_OPERATION_FLUSH },
};

/**
 * Undoes a response's Content-Encoding (gzip/x-gzip, deflate with or without zlib header, br,
 * identity; stacked codings are undone last-applied first).
 * No stage ever produces more than `maxDecodedBytes`: past it decoding stops and the result is
 * CS_BOMB with an empty body, so a bomb never allocates more than the cap.
 * A stream cut short (e.g. a body truncated at the fetch cap) yields what could be decoded and
 * CS_PARSE; corrupt data yields CS_PARSE with an empty body, and an unknown coding CS_PARSE with
 * the raw bytes (the caller may still sniff them). An identity body is returned as is. Never throws.
 */
export function decodeBody(raw: Buffer, contentEncoding: string | undefined, maxDecodedBytes: number): DecodedBody {
  const codings = (contentEncoding ?? '')
    .split(',')
    .map((c) => c.trim().toLowerCase())
    .filter((c) => c !== '' && c !== 'identity');
  if (codings.length > MAX_CODINGS) {
    return {
      body: raw,
      errorCode: 'CS_PARSE',
      message: `too many content codings (${codings.length}): ${contentEncoding}`,
    };
  }
  const unknown = codings.find((c) => DECODERS[c] === undefined);
  if (unknown !== undefined) {
    return { body: raw, errorCode: 'CS_PARSE', message: `unsupported content coding '${unknown}'` };
  }
  let body = raw;
  for (const coding of codings.reverse()) {
    const decoder = DECODERS[coding]!;
    try {
      body = decoder.decode(body, { maxOutputLength: maxDecodedBytes });
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ERR_BUFFER_TOO_LARGE') {
        return {
          body: Buffer.alloc(0),
          errorCode: 'CS_BOMB',
          message: `${coding} body of ${body.length} bytes decodes to more than the cap of ${maxDecodedBytes} bytes`,
        };
      }
      if (code === 'Z_BUF_ERROR') {
        return salvage(body, coding, decoder, maxDecodedBytes);
      }
      return {
        body: Buffer.alloc(0),
        errorCode: 'CS_PARSE',
        message: `corrupt ${coding} body: ${(err as Error).message}`,
      };
    }
  }
  return { body };
}

/** Decodes as much of a cut-short stream as possible, e.g. the first 10 MB of a larger page. */
function salvage(input: Buffer, coding: string, decoder: (typeof DECODERS)[string], cap: number): DecodedBody {
  const message = `${coding} stream ends early (${input.length} bytes received)`;
  try {
    const body = decoder.decode(input, { maxOutputLength: cap, finishFlush: decoder.salvageFlush });
    return { body, errorCode: 'CS_PARSE', message };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') {
      return {
        body: Buffer.alloc(0),
        errorCode: 'CS_BOMB',
        message: `${message}; decodes to more than the cap of ${cap} bytes`,
      };
    }
    return { body: Buffer.alloc(0), errorCode: 'CS_PARSE', message };
  }
}

/** `deflate` in the wild is zlib-wrapped (RFC 9110) or, from some servers, raw RFC 1951. */
function inflateEither(input: Buffer, options: zlib.ZlibOptions): Buffer {
  try {
    return zlib.inflateSync(input, options);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'Z_DATA_ERROR') throw err;
    return zlib.inflateRawSync(input, options);
  }
}

/**
 * Whether `raw`, undone per its Content-Encoding, is larger than `maxDecodedBytes`: the bomb test,
 * made without keeping any decoded byte (streamed and counted, stopped at the cap), so a 1 GB bomb
 * costs the time to inflate `maxDecodedBytes` and a few KB of memory. Corrupt, cut-short or
 * unknown codings answer false (the parser reports those); identity answers false. Never rejects.
 */
export function decodedSizeExceeds(
  raw: Buffer,
  contentEncoding: string | undefined,
  maxDecodedBytes: number,
): Promise<boolean> {
  const codings = (contentEncoding ?? '')
    .split(',')
    .map((c) => c.trim().toLowerCase())
    .filter((c) => c !== '' && c !== 'identity');
  if (codings.length === 0 || codings.length > MAX_CODINGS || codings.some((c) => DECODERS[c] === undefined))
    return Promise.resolve(false);
  const stages = codings.reverse().map((c, i) => decoderStream(c, i === 0 ? raw : undefined));
  return new Promise((resolve) => {
    let total = 0;
    let settled = false;
    const finish = (exceeded: boolean): void => {
      if (settled) return;
      settled = true;
      for (const s of stages) s.destroy();
      resolve(exceeded);
    };
    for (let i = 0; i < stages.length; i++) {
      stages[i]!.on('error', () => finish(false));
      if (i + 1 < stages.length) stages[i]!.pipe(stages[i + 1]!);
    }
    const last = stages[stages.length - 1]!;
    last.on('data', (chunk: Buffer) => {
      total += chunk.length;
      if (total > maxDecodedBytes) finish(true);
    });
    last.on('end', () => finish(false));
    stages[0]!.end(raw);
  });
}

function decoderStream(
  coding: string,
  firstInput: Buffer | undefined,
): zlib.Gunzip | zlib.Inflate | zlib.InflateRaw | zlib.BrotliDecompress {
  if (coding === 'br') return zlib.createBrotliDecompress();
  if (coding === 'deflate') {
    // a zlib header is CMF/FLG with method 8 and a multiple of 31; otherwise the stream is raw deflate
    const zlibWrapped =
      firstInput === undefined ||
      firstInput.length < 2 ||
      ((firstInput[0]! & 0x0f) === 8 && ((firstInput[0]! << 8) | firstInput[1]!) % 31 === 0);
    return zlibWrapped ? zlib.createInflate() : zlib.createInflateRaw();
  }
  return zlib.createGunzip();
}
