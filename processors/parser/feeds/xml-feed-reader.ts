import { Parser } from 'htmlparser2';
import type { FeedCollector } from './feed-collector.js';
import { parseFeedDate } from './feed-dates.js';
import type { FeedFormat } from './feed-types.js';

// the one file of feeds/ that touches the XML parser (htmlparser2 in xmlMode, as a SAX stream)

const NS_ATOM = 'http://www.w3.org/2005/Atom';
const NS_ATOM_03 = 'http://purl.org/atom/ns#';
const NS_RSS_1 = 'http://purl.org/rss/1.0/';
const NS_DC = 'http://purl.org/dc/elements/1.1/';
const NS_XML = 'http://www.w3.org/XML/1998/namespace';

// longest text kept of one field (loc, link, date); past it the field is junk and reads as missing
const MAX_FIELD_CHARS = 8_192;

// an XML name, loosely: what no tag name can start with or contain
const XML_NAME = /^[^\s\d<>\-.!?/'"=&;][^\s<>/'"=&;]*$/;

/** The root element's format, by its namespace and local name. */
function formatOf(ns: string, local: string): FeedFormat | null {
  if (local === 'urlset') return 'SITEMAP';
  if (local === 'sitemapindex') return 'SITEMAP_INDEX';
  // RSS 2.0 has no namespace, though some feeds give it one (`http://backend.userland.com/rss2`)
  if (local === 'rss') return 'RSS';
  if (local === 'RDF') return 'RSS';
  if (local === 'feed' && (ns === NS_ATOM || ns === NS_ATOM_03 || ns === '')) return 'ATOM';
  return null;
}

interface Entry {
  depth: number;
  /** The entry element's namespace: its fields are the children in it. */
  ns: string;
  fields: Map<string, string>;
  /** The first `<link rel=alternate>` (or rel-less) href of an Atom entry, with the base it resolves against. */
  href?: string;
  /** The xml:base in force for the entry's link, for relative URLs in feeds. */
  base: string;
  permalinkGuid: boolean;
}

/**
 * Reads a sitemap, sitemap index, RSS or Atom document from decoded chunks into `collector`
 * without building a tree: only the text of the field being read (at most MAX_FIELD_CHARS) is held.
 *
 * An element counts when it is in the root element's namespace (so `<image:loc>` or `<news:…>`
 * inside a `<url>` are ignored, and a prefixed `<ns:urlset>` works), RSS 1.0 items in theirs, and
 * `dc:date` for a feed item's date. XXE-safe by construction: the parser never reads a DTD, so an
 * `<!ENTITY>` declaration defines nothing; only the five predefined entities and character
 * references are decoded, any other `&name;` stays literal text. CDATA sections are text.
 *
 * Not well-formed XML (an element left open or closed by another's end tag, content after the
 * root, a bad tag name) is one CS_FEED_MALFORMED error (elements left open at the end are not when
 * `complete` is false: the input was cut at a limit); entries read before and after it are kept,
 * an entry still open at the end of input is dropped (its URL may be cut).
 * A root element that is not a sitemap or feed is CS_FEED_UNKNOWN, and reading stops.
 */
export function readXmlFeed(
  chunks: Iterable<string>,
  collector: FeedCollector,
  feedUrl: string,
  complete: boolean,
): void {
  let format: FeedFormat | null = null;
  let rootNs = '';
  let depth = 0;
  let rootClosed = false;
  // in parser.end(): elements still open are closed; when not `complete` the input was cut at the limit
  let ending = false;
  // namespace and xml:base declarations, innermost last, with the depth of the element declaring them
  const nsScopes: { depth: number; prefix: string; uri: string }[] = [];
  const bases: { depth: number; url: string }[] = [{ depth: 0, url: feedUrl }];
  let entry: Entry | undefined;
  let field: { name: string; depth: number; text: string; overflow: boolean } | undefined;
  let lastOpened: string | undefined;

  const resolveNs = (prefix: string): string => {
    if (prefix === 'xml') return NS_XML;
    for (let i = nsScopes.length - 1; i >= 0; i--) if (nsScopes[i]!.prefix === prefix) return nsScopes[i]!.uri;
    return '';
  };

  const entryElement = (ns: string, local: string): boolean => {
    switch (format) {
      case 'SITEMAP':
        return depth === 2 && ns === rootNs && local === 'url';
      case 'SITEMAP_INDEX':
        return depth === 2 && ns === rootNs && local === 'sitemap';
      case 'ATOM':
        return depth === 2 && ns === rootNs && local === 'entry';
      case 'RSS':
        // RSS 2.0 nests items in <channel>, RSS 0.9x and 1.0 beside it
        return depth >= 2 && local === 'item' && (ns === rootNs || ns === NS_RSS_1);
      default:
        return false;
    }
  };

  const parser = new Parser(
    {
      onopentag(name, attrs) {
        depth++;
        lastOpened = name;
        if (rootClosed) return malformed();
        if (!XML_NAME.test(name)) malformed();
        for (const attr in attrs) {
          if (attr === 'xmlns') nsScopes.push({ depth, prefix: '', uri: attrs[attr]! });
          else if (attr.startsWith('xmlns:')) nsScopes.push({ depth, prefix: attr.slice(6), uri: attrs[attr]! });
        }
        const colon = name.indexOf(':');
        const local = colon === -1 ? name : name.slice(colon + 1);
        const ns = resolveNs(colon === -1 ? '' : name.slice(0, colon));
        if (attrs['xml:base'] !== undefined) pushBase(attrs['xml:base']);

        if (depth === 1) {
          format = formatOf(ns, local);
          rootNs = ns;
          if (format === null) collector.unknown();
          else collector.recognize(format);
          return;
        }
        if (entry === undefined) {
          if (entryElement(ns, local)) {
            entry = { depth, ns, fields: new Map(), base: bases[bases.length - 1]!.url, permalinkGuid: true };
          }
          return;
        }
        if (depth !== entry.depth + 1) return;
        const fname = ns === entry.ns ? local : ns === NS_DC && local === 'date' ? 'date' : undefined;
        if (fname === undefined) return;
        if (format === 'ATOM' && fname === 'link') {
          const rel = attrs.rel?.trim().toLowerCase();
          if (entry.href === undefined && attrs.href !== undefined && (rel === undefined || rel === 'alternate')) {
            entry.href = attrs.href;
            entry.base = bases[bases.length - 1]!.url;
          }
          return;
        }
        if (fname === 'guid') entry.permalinkGuid = attrs.isPermaLink?.trim().toLowerCase() !== 'false';
        if (!entry.fields.has(fname)) field = { name: fname, depth, text: '', overflow: false };
      },
      ontext(text) {
        lastOpened = undefined;
        if (field !== undefined && depth === field.depth) {
          if (field.text.length + text.length > MAX_FIELD_CHARS) field.overflow = true;
          else field.text += text;
        } else if (rootClosed && text.trim() !== '') {
          malformed();
        }
      },
      onclosetag(name, implied) {
        // an element closed at the end of input, or by another's end tag (not a self-closing tag)
        if (ending ? complete : implied && lastOpened !== name) malformed();
        lastOpened = undefined;
        if (field !== undefined && depth === field.depth) {
          if (entry !== undefined) entry.fields.set(field.name, field.overflow ? '' : field.text);
          field = undefined;
        }
        if (entry !== undefined && depth === entry.depth) {
          // an entry left open at the end of input (cut by a limit, or never closed) may hold half a URL
          if (!ending) finishEntry(entry);
          entry = undefined;
        }
        while (nsScopes.length > 0 && nsScopes[nsScopes.length - 1]!.depth === depth) nsScopes.pop();
        while (bases.length > 1 && bases[bases.length - 1]!.depth === depth) bases.pop();
        depth--;
        if (depth === 0) rootClosed = true;
      },
    },
    { xmlMode: true, decodeEntities: true, recognizeSelfClosing: true },
  );

  function pushBase(raw: string): void {
    try {
      bases.push({ depth, url: new URL(raw.trim(), bases[bases.length - 1]!.url).href });
    } catch {
      // an unusable xml:base leaves the enclosing base in force
    }
  }

  function malformed(): void {
    collector.documentError('CS_FEED_MALFORMED');
  }

  function finishEntry(e: Entry): void {
    const date = (name: string): number | null => parseFeedDate(e.fields.get(name));
    switch (format) {
      case 'SITEMAP':
      case 'SITEMAP_INDEX': {
        const loc = e.fields.get('loc');
        if (loc === undefined) collector.badEntry();
        else if (format === 'SITEMAP') collector.addPage(loc, date('lastmod'), undefined);
        else collector.addSitemap(loc, date('lastmod'));
        return;
      }
      case 'RSS': {
        const link = e.fields.get('link');
        const guid = e.permalinkGuid ? e.fields.get('guid')?.trim() : undefined;
        const lastmod = date('pubDate') ?? date('date');
        // an item need not have a link (a title or description will do); a guid is used only when a URL
        if (link !== undefined && link.trim() !== '') collector.addPage(link, lastmod, e.base);
        else if (guid !== undefined && /^https?:\/\//i.test(guid)) collector.addPage(guid, lastmod, e.base);
        return;
      }
      case 'ATOM':
        if (e.href !== undefined) collector.addPage(e.href, date('updated') ?? date('published'), e.base);
        return;
    }
  }

  try {
    for (const chunk of chunks) {
      parser.write(chunk);
      if (collector.stopped) return;
    }
    ending = true;
    parser.end();
  } catch {
    // htmlparser2 is forgiving; this only guards the "never throws" contract
    malformed();
  }
  if (format === null && !collector.stopped) collector.unknown();
}
