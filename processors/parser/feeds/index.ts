export { parseFeed } from './parse-feed.js';
export { isFeedLink } from './feed-links.js';
export { parseFeedDate } from './feed-dates.js';
export {
  MAX_FEED_BYTES,
  MAX_FEED_URLS,
  type FeedEntry,
  type FeedErrorCode,
  type FeedFormat,
  type FeedOptions,
  type FeedParse,
  type FeedScope,
} from './feed-types.js';
