// MIME types of the feeds parseFeed reads, as pages announce them (RSS Autodiscovery, RFC 4287 §7)
const FEED_TYPES = new Set(['application/rss+xml', 'application/atom+xml']);

/**
 * Whether a `<link rel type>` announces an RSS or Atom feed: `rel` holds the token `alternate`
 * (ASCII case-insensitive, among others such as `alternate home`) and `type`'s MIME essence is
 * `application/rss+xml` or `application/atom+xml` (parameters and case ignored).
 */
export function isFeedLink(rel: string | undefined, type: string | undefined): boolean {
  if (rel === undefined || type === undefined) return false;
  const essence = type.split(';', 1)[0]!.trim().toLowerCase();
  return (
    FEED_TYPES.has(essence) &&
    rel
      .toLowerCase()
      .split(/[\t\n\f\r ]+/)
      .includes('alternate')
  );
}
