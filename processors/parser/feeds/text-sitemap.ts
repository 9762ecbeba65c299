import type { FeedCollector } from './feed-collector.js';

// a URL line is at most ~2 KB; a longer line is junk and only its length is tracked
const MAX_LINE_CHARS = 8_192;

const URL_LINE = /^[\t ]*https?:\/\/[^\s/?#]+\S*[\t ]*\r?$/i;

/**
 * Whether the start of a body reads as a text sitemap: its first non-blank line is an absolute
 * http(s) URL. Used when the Content-Type does not say text/plain.
 */
export function looksLikeTextSitemap(head: string): boolean {
  const firstLine = /^\s*([^\n]*)/.exec(head.replace(/^\uFEFF/, ''))![1]!;
  return URL_LINE.test(firstLine);
}

/**
 * Reads a text sitemap (sitemaps.org: one absolute URL per line, UTF-8): every non-blank line is a
 * URL, trimmed; a line that is not one (relative, not http(s), over 8 KB) is a bad entry. Lines
 * are split as chunks arrive, holding one line at most. When the input is not `complete` (cut at a
 * limit), its last line, without a line break, may be half a URL and is dropped.
 */
export function readTextSitemap(chunks: Iterable<string>, collector: FeedCollector, complete: boolean): void {
  let line = '';
  let overlong = false;
  const endLine = (): void => {
    if (overlong) collector.badEntry();
    else if (line.trim() !== '') collector.addPage(line, null, undefined);
    line = '';
    overlong = false;
  };
  for (const chunk of chunks) {
    let from = 0;
    for (let nl = chunk.indexOf('\n'); nl !== -1 && !collector.stopped; nl = chunk.indexOf('\n', from)) {
      append(chunk.slice(from, nl));
      endLine();
      from = nl + 1;
    }
    if (collector.stopped) return;
    append(chunk.slice(from));
  }
  if (complete) endLine();

  function append(part: string): void {
    if (overlong) return;
    if (line.length + part.length > MAX_LINE_CHARS) {
      overlong = true;
      line = '';
    } else {
      line += part;
    }
  }
}
