import { InvalidOptionError } from '../core/errors.js';
import { APPLICATION_ID_PATTERN } from '../runtime/topology.js';
import { APPLICATION_ID } from '../topology/crawl-topology.js';

/** What `--app-id` must be, as refusals say it. */
export const APP_ID_FORM = 'lower-case letters, digits and dashes, starting with a letter';

/** The `--app-id` option, for `parseArgs`. */
export const APP_ID_ARG = { 'app-id': { type: 'string' } } as const;

/** The `--app-id` paragraph of a Kafka command's usage. */
export const APP_ID_USAGE = `  --app-id ID   the crawl's application id (default ${APPLICATION_ID}): other ids prefix the data
                topics ('ID.links'), and name changelogs, groups and transactional ids, so crawls
                with different ids share a Kafka cluster and nothing else; also as CRAWLSTREAM_APP_ID`;

/**
 * Validates `--app-id`, else CRAWLSTREAM_APP_ID (as the security options fall back to the
 * environment): lower-case letters, digits and dashes, starting with a letter, since it becomes
 * part of topic, group and transactional-id names. APPLICATION_ID when neither is given.
 */
export function appIdOf(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  const [source, raw] = flag !== undefined ? ['--app-id', flag] : ['CRAWLSTREAM_APP_ID', env['CRAWLSTREAM_APP_ID']];
  if (raw === undefined) return APPLICATION_ID;
  if (!APPLICATION_ID_PATTERN.test(raw))
    throw new InvalidOptionError(`${source} must be ${APP_ID_FORM}, got ${JSON.stringify(raw)}`);
  return raw;
}

/**
 * `--app-id` of a command that reads Kafka with `--brokers` and an embedded data dir without:
 * refused without `--brokers` (an embedded crawl is named by its --data DIR, and its logs by the
 * default id), else as `appIdOf`.
 */
export function kafkaAppIdOf(flag: string | undefined, kafka: boolean, what: string): string {
  if (flag !== undefined && !kafka)
    throw new InvalidOptionError(`${what}: --app-id needs --brokers (an embedded crawl is named by its --data DIR)`);
  return kafka ? appIdOf(flag) : APPLICATION_ID;
}
