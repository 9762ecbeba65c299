/**
 * The page's text as a reader sees it: which elements hide their text, which do not break words,
 * which are page furniture or the page's own content, and the collector that keeps the collapsed
 * text up to a cap. Used by extractLinks' single pass over the page.
 */

// elements whose text content a reader never sees; elements often left unclosed (head,
// noscript, object) are not listed, as one of them would hide the rest of the page
export const INVISIBLE = new Set([
  'script',
  'style',
  'template',
  'svg',
  'math',
  'title',
  'iframe',
  'noembed',
  'noframes',
]);

// elements that do not break words; every other tag boundary counts as whitespace
export const INLINE = new Set([
  'a',
  'abbr',
  'b',
  'bdi',
  'bdo',
  'cite',
  'code',
  'data',
  'dfn',
  'em',
  'font',
  'i',
  'kbd',
  'mark',
  'q',
  's',
  'samp',
  'small',
  'span',
  'strike',
  'strong',
  'sub',
  'sup',
  'time',
  'tt',
  'u',
  'var',
  'wbr',
]);

// page furniture a boilerplate-reduced text leaves out, by element and by ARIA role
export const BOILERPLATE = new Set(['nav', 'header', 'footer', 'aside']);
export const BOILERPLATE_ROLES = new Set(['navigation', 'banner', 'contentinfo', 'complementary', 'search']);
// the page's own content, when it marks it
export const MAIN = new Set(['main', 'article']);

// whitespace runs other than a lone space: a lone space, by far the most common, is left alone
const NOT_A_LONE_SPACE = /\s\s+|[^\S ]/g;

/** `s` with every whitespace run as one space, trimmed. */
export function collapse(s: string): string {
  return s.replace(NOT_A_LONE_SPACE, ' ').trim();
}

/**
 * Accumulates text up to a cap of collapsed characters, then ignores the rest cheaply.
 * Whitespace is collapsed in batches, not per chunk: most chunks are short and most pages
 * stay far below the cap.
 */
export class TextCollector {
  private parts: string[] = [];
  private rawLength = 0;
  private full = false;
  /** `finish()` cut the text at the cap (or text past it was ignored). */
  truncated = false;

  constructor(private readonly cap: number) {}

  add(data: string): void {
    if (this.full) return;
    this.parts.push(data);
    this.rawLength += data.length;
    if (this.rawLength > 2 * this.cap) this.compact();
  }

  /** A tag boundary that separates words (block elements, line breaks). */
  boundary(): void {
    if (this.full || this.parts.length === 0 || this.parts[this.parts.length - 1] === ' ') return;
    this.parts.push(' ');
    this.rawLength++;
  }

  finish(): string {
    // trimming the end chunks before joining, rather than the joined text after collapsing, keeps
    // the text one flat string: trim() returns a slice of its input, and every charCodeAt on a
    // slice goes through its parent, which costs SimHash ~15 % on a long text
    const parts = this.parts;
    let first = 0;
    let last = parts.length - 1;
    for (; first <= last; first++) {
      const chunk = parts[first]!.trimStart();
      if (chunk === '') continue;
      parts[first] = chunk;
      break;
    }
    for (; last >= first; last--) {
      const chunk = parts[last]!.trimEnd();
      if (chunk === '') continue;
      parts[last] = chunk;
      break;
    }
    const text = (first === 0 && last === parts.length - 1 ? parts : parts.slice(first, last + 1))
      .join('')
      .replace(NOT_A_LONE_SPACE, ' ');
    if (text.length <= this.cap) return text;
    this.truncated = true;
    return text.slice(0, this.cap).trimEnd();
  }

  private compact(): void {
    const text = this.parts.join('').replace(NOT_A_LONE_SPACE, ' ').trimStart();
    this.parts = [text];
    this.rawLength = text.length;
    if (text.length > this.cap) this.full = true;
  }
}
