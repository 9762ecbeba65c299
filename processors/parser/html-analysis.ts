import type { CrawlErrorCode } from '../../core/errors.js';
import { decodeBody } from '../common/decode.js';
import { decodeHtml, sniffCharset } from './charset.js';
import { extractLinks, type ExtractedLink } from './extract-links.js';
import { simhash64 } from './simhash.js';

/**
 * What the parser reads from one HTML body: everything it derives that depends on the bytes alone.
 * Plain data (no class instances), so it crosses a worker thread's message port unchanged but for
 * `simhash`, which arrives as a Uint8Array (see `fromTransfer`).
 */
export interface HtmlAnalysis {
  /** The body could not be decoded (CS_DECODE, CS_BOMB, …); nothing else is set then. */
  errorCode: CrawlErrorCode | null;
  /** The WHATWG encoding the body was read in. */
  encoding?: string;
  canonical?: string;
  simhash?: Buffer;
  lang?: string;
  noindex: boolean;
  nofollow: boolean;
  links: ExtractedLink[];
  feeds: string[];
  /** For `page-content` (see ExtractResult): title, meta description, main text and whether it was cut. */
  title?: string;
  description?: string;
  mainText?: string;
  mainTextTruncated?: boolean;
}

/** One body to analyse, with the settings that change the answer. */
export interface AnalysisRequest {
  body: Buffer;
  contentEncoding: string | undefined;
  contentType: string | null;
  url: string;
  maxDecodedBytes: number;
  maxLinks: number;
  robotsToken: string;
  /** Main text collected, in characters (ExtractOptions.mainTextChars); 0: none. */
  mainTextChars: number;
}

/**
 * Decodes the body (content encoding, then charset), extracts links, canonical, feeds, lang and
 * meta robots, and computes the SimHash of the visible text. Pure and deterministic: the same
 * request gives the same analysis on any thread. Throws only on a bug, never on hostile input.
 */
export function analyzeHtml(req: AnalysisRequest): HtmlAnalysis {
  const decoded = decodeBody(req.body, req.contentEncoding, req.maxDecodedBytes);
  if (decoded.errorCode) return { errorCode: decoded.errorCode, noindex: false, nofollow: false, links: [], feeds: [] };
  const sniffed = sniffCharset(decoded.body, req.contentType);
  const extracted = extractLinks(decodeHtml(decoded.body, sniffed), req.url, {
    maxLinks: req.maxLinks,
    encoding: sniffed.encoding,
    robotsToken: req.robotsToken,
    mainTextChars: req.mainTextChars,
  });
  const simhash = simhash64(extracted.text);
  return {
    errorCode: null,
    encoding: sniffed.encoding,
    ...(extracted.canonical !== undefined ? { canonical: extracted.canonical } : {}),
    ...(simhash !== undefined ? { simhash } : {}),
    ...(extracted.lang !== undefined ? { lang: extracted.lang } : {}),
    noindex: extracted.noindex,
    nofollow: extracted.nofollow,
    links: extracted.links,
    feeds: extracted.feeds ?? [],
    ...(extracted.title !== undefined ? { title: extracted.title } : {}),
    ...(extracted.description !== undefined ? { description: extracted.description } : {}),
    ...(extracted.mainText !== undefined
      ? { mainText: extracted.mainText, mainTextTruncated: extracted.mainTextTruncated ?? false }
      : {}),
  };
}

/** An analysis as it arrives from another thread: its SimHash a Buffer again. */
export function fromTransfer(a: HtmlAnalysis): HtmlAnalysis {
  const s = a.simhash as Uint8Array | undefined;
  return s === undefined || Buffer.isBuffer(s)
    ? a
    : { ...a, simhash: Buffer.from(s.buffer, s.byteOffset, s.byteLength) };
}

/** Whether a response body is HTML: by Content-Type, else by its first non-blank byte being `<`. */
export function isHtml(contentType: string | null, body: Buffer): boolean {
  if (contentType === null) {
    // a UTF-8 byte order mark may come before the markup
    const start = body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf ? 3 : 0;
    return body.subarray(start, 512).toString('latin1').trimStart().startsWith('<');
  }
  return /^\s*(text\/html|application\/xhtml\+xml)/i.test(contentType);
}
