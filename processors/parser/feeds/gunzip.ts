import zlib from 'node:zlib';

export interface Gunzipped {
  /** The inflated bytes, at most the cap; the part within the cap when `tooLarge`, what could be inflated when `corrupt`. */
  body: Buffer;
  /** The stream inflates to more than the cap. */
  tooLarge: boolean;
  /** Not a valid gzip stream (bad header, bad data, cut short). */
  corrupt: boolean;
}

/** Whether a body starts with the gzip magic bytes: a `.xml.gz` sitemap served without Content-Encoding. */
export function isGzip(body: Uint8Array): boolean {
  return body.length >= 2 && body[0] === 0x1f && body[1] === 0x8b;
}

// each probe for the part within the cap inflates up to the cap; this many bound the time
const MAX_PROBES = 8;

/**
 * Inflates a gzip body (several members too) without ever holding more than `maxBytes` of output:
 * zlib stops at the cap, so a bomb costs the time to inflate `maxBytes` per probe, not its size.
 * Past the cap, the part of the stream that inflates within it is found by bisecting the
 * compressed prefix (to within 1/256 of the compressed size, at most MAX_PROBES probes): a
 * sitemap over the limit still yields its first entries. Never throws.
 */
export function gunzipCapped(gz: Uint8Array, maxBytes: number): Gunzipped {
  const input = Buffer.from(gz.buffer, gz.byteOffset, gz.byteLength);
  try {
    return { body: zlib.gunzipSync(input, { maxOutputLength: maxBytes }), tooLarge: false, corrupt: false };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ERR_BUFFER_TOO_LARGE') return { body: prefixWithin(input, maxBytes), tooLarge: true, corrupt: false };
    // cut short (a body truncated at the fetch cap): what the complete part inflates to
    if (code === 'Z_BUF_ERROR') return { ...syncFlushed(input, maxBytes), corrupt: true };
    return { body: Buffer.alloc(0), tooLarge: false, corrupt: true };
  }
}

/** The output of the longest compressed prefix found whose output fits in `maxBytes`. */
function prefixWithin(input: Buffer, maxBytes: number): Buffer {
  let fits = 0;
  let best: Buffer = Buffer.alloc(0);
  let tooBig = input.length;
  const precision = Math.max(1024, input.length / 256);
  for (let probe = 0; probe < MAX_PROBES && tooBig - fits > precision; probe++) {
    const mid = Math.floor((fits + tooBig) / 2);
    const out = syncFlushed(input.subarray(0, mid), maxBytes);
    if (out.tooLarge) {
      tooBig = mid;
    } else {
      fits = mid;
      best = out.body;
    }
  }
  return best;
}

/** Inflates an incomplete stream as far as it goes. */
function syncFlushed(input: Buffer, maxBytes: number): { body: Buffer; tooLarge: boolean } {
  try {
    const body = zlib.gunzipSync(input, { maxOutputLength: maxBytes, finishFlush: zlib.constants.Z_SYNC_FLUSH });
    return { body, tooLarge: false };
  } catch (err) {
    return { body: Buffer.alloc(0), tooLarge: (err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE' };
  }
}
