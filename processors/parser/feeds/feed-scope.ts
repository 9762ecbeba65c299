import { InvalidOptionError } from '../../../core/errors.js';
import { normalizeUrl } from '../../common/normalize.js';
import type { ResolvedScope } from './feed-collector.js';
import type { FeedScope } from './feed-types.js';

export interface FeedScopes {
  /** The feed's own URL, normalized: relative links in feeds resolve against it. */
  feedUrl: string;
  /** The caller's scope, or null (sitemaps then use `sitemapFolder`, feeds are unscoped). */
  scope: ResolvedScope;
  /** The folder of the sitemap's URL (`http://a/x/` for `http://a/x/sitemap.xml`): the protocol's path rule. */
  sitemapFolder: string;
}

/**
 * The prefixes the scope rule compares normalized URLs with. Throws InvalidOptionError when
 * `feedUrl` is not an absolute http(s) URL or `scope` is malformed: arguments, not the body.
 */
export function resolveScopes(feedUrl: string, scope: FeedScope | undefined): FeedScopes {
  const feed = normalizeUrl(feedUrl);
  if (!feed.ok) throw new InvalidOptionError(`feed URL must be an absolute http(s) URL, got ${feedUrl}`);
  const url = new URL(feed.url);
  const ownOrigin = `${url.origin}/`;
  const sitemapFolder = url.origin + url.pathname.slice(0, url.pathname.lastIndexOf('/') + 1);
  if (scope === undefined) return { feedUrl: feed.url, scope: { pages: null, sitemaps: [ownOrigin] }, sitemapFolder };

  let origin: URL | undefined;
  try {
    origin = new URL(scope.origin);
  } catch {
    origin = undefined;
  }
  if (origin === undefined || origin.pathname !== '/' || origin.search !== '' || origin.hash !== '') {
    throw new InvalidOptionError(`feed scope origin must be scheme://host[:port], got ${scope.origin}`);
  }
  if (!scope.pathPrefix.startsWith('/')) {
    throw new InvalidOptionError(`feed scope pathPrefix must start with /, got ${scope.pathPrefix}`);
  }
  const pages = normalizeUrl(origin.origin + scope.pathPrefix);
  if (!pages.ok)
    throw new InvalidOptionError(`feed scope is not an http(s) URL prefix: ${scope.origin}${scope.pathPrefix}`);
  const scopeOrigin = `${new URL(pages.url).origin}/`;
  return {
    feedUrl: feed.url,
    scope: { pages: pages.url, sitemaps: scopeOrigin === ownOrigin ? [ownOrigin] : [ownOrigin, scopeOrigin] },
    sitemapFolder,
  };
}
