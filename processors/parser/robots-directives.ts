/**
 * Robots directives of a page, from `<meta name="robots" content="…">` and the `X-Robots-Tag`
 * response header (the conventions search engines document, e.g.
 * https://developers.google.com/search/docs/crawling-indexing/robots-meta-tag):
 * `noindex` — the page is not to be indexed (it is still archived; the page record says so);
 * `nofollow` — its links are not to be followed; `none` — both. Other rules (`index`, `follow`,
 * `all`, `nosnippet`, `max-snippet:…`, …) change nothing here.
 */
export interface RobotsDirectives {
  noindex: boolean;
  nofollow: boolean;
}

/** The directives of a comma- (or space-) separated rule list, as in a meta robots `content`. */
export function robotsContent(content: string): RobotsDirectives {
  const out: RobotsDirectives = { noindex: false, nofollow: false };
  for (const rule of content.toLowerCase().split(/[\s,]+/)) applyRule(out, rule);
  return out;
}

// rules that carry a value after a colon; any other `name:` before a rule is a user agent
const RULES_WITH_VALUE = new Set(['unavailable_after', 'max-snippet', 'max-image-preview', 'max-video-preview']);

/**
 * The directives of `X-Robots-Tag` header values that apply to a crawler whose user-agent token
 * is `token` (matched case-insensitively). Each value is a comma-separated list of rules; a rule
 * may be prefixed with `agent:`, and that prefix scopes it and the rules after it in the same
 * value to that agent: `X-Robots-Tag: otherbot: noindex, nofollow` is none of our business,
 * `X-Robots-Tag: crawlstream: nofollow` and `X-Robots-Tag: nofollow` are. Several headers
 * combine (a rule from any of them applies).
 */
export function xRobotsTag(values: readonly string[], token: string): RobotsDirectives {
  const out: RobotsDirectives = { noindex: false, nofollow: false };
  const ours = token.toLowerCase();
  for (const value of values) {
    let applies = true;
    for (const item of value.split(',')) {
      let rule = item.trim().toLowerCase();
      const colon = rule.indexOf(':');
      if (colon > 0 && !RULES_WITH_VALUE.has(rule.slice(0, colon).trim())) {
        applies = rule.slice(0, colon).trim() === ours;
        rule = rule.slice(colon + 1).trim();
      }
      if (applies) for (const r of rule.split(/\s+/)) applyRule(out, r);
    }
  }
  return out;
}

function applyRule(out: RobotsDirectives, rule: string): void {
  if (rule === 'noindex' || rule === 'none') out.noindex = true;
  if (rule === 'nofollow' || rule === 'none') out.nofollow = true;
}
