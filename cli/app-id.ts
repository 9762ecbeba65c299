import { InvalidOptionError } from '../core/errors.js';
import { APPLICATION_ID } from '../topology/application-id.js';

/** What `--app-id` must be, as refusals say it. */
export const APP_ID_FORM = 'lower-case letters, digits and dashes, starting with a letter';

/**
 * The application id of a command that reads Kafka with `--brokers` and an embedded data dir
 * without: the resolved `--app-id` on Kafka (its form is checked by the settings schema), else
 * APPLICATION_ID, which names an embedded crawl's logs. A `--app-id` flag without `--brokers` is
 * refused (an embedded crawl is named by its --data DIR); one from the shared environment or
 * file is not, as it may be there for another command.
 */
export function kafkaAppIdOf(
  appId: { readonly value: unknown; readonly source: string } | undefined,
  kafka: boolean,
  what: string,
): string {
  if (appId?.source === 'flag --app-id' && !kafka)
    throw new InvalidOptionError(`${what}: --app-id needs --brokers (an embedded crawl is named by its --data DIR)`);
  return kafka && appId !== undefined ? (appId.value as string) : APPLICATION_ID;
}
