import { normalizeUrl } from '../common/normalize.js';

/** The URLs of a page's links and directives: hrefs to crawlable URLs, refresh directives, bases. */

// schemes that are never crawlable and are not counted as dropped
const SKIPPED_SCHEME = /^(?:javascript|mailto|data|tel|sms|callto|about|blob):/i;

/**
 * The URL of a refresh directive (`5; url='next.html'`, `0;URL=/x`, `0, next`), per the HTML
 * standard's shared declarative refresh steps, or undefined when it only reloads the page.
 */
export function parseRefresh(content: string): string | undefined {
  const time = /^\s*(\d*)(\.[\d.]*)?/.exec(content)!;
  if (time[1] === '' && time[2] === undefined) return undefined;
  let rest = content.slice(time[0].length);
  if (rest !== '' && !/^[\s;,]/.test(rest)) return undefined;
  rest = rest.replace(/^\s*[;,]?\s*/, '');
  const prefix = /^url\s*=\s*/i.exec(rest);
  if (prefix !== null) rest = rest.slice(prefix[0].length);
  const quote = rest[0];
  if (quote === '"' || quote === "'") {
    const end = rest.indexOf(quote, 1);
    rest = end === -1 ? rest.slice(1) : rest.slice(1, end);
  }
  rest = rest.trim();
  return rest === '' ? undefined : rest;
}

/** The normalized URL, '' for hrefs skipped by design, null for hrefs that fail normalization. */
export function normalizeHref(href: string, base: string | undefined): string | null {
  const trimmed = href.trim();
  if (trimmed === '' || trimmed.charCodeAt(0) === 0x23 /* # */ || SKIPPED_SCHEME.test(trimmed)) return '';
  const n = normalizeUrl(trimmed, base);
  return n.ok ? n.url : null;
}

/** `href` resolved against `base` when it is an http(s) URL; undefined otherwise or when it does not parse. */
export function resolveHttp(href: string, base: string): string | undefined {
  try {
    const url = new URL(href.trim(), base);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.href : undefined;
  } catch {
    return undefined;
  }
}

/** Whether `url` parses on its own, without a base. */
export function isAbsolute(url: string): boolean {
  try {
    new URL(url);
    return true;
  } catch {
    return false;
  }
}
