/**
 * The version of what the parser derives from a fetched payload, stamped on every page record
 * (`parserVersion`). Bump it in the same commit as any change that alters a derived field of a
 * page record or the links it publishes (link extraction, normalization, charset sniffing,
 * SimHash, robots directives, duplicate rules, feed reading): `crawlstream replay reparse` then
 * re-derives the archived pages under the new number, and its idempotence is per version — a
 * reparse under a version already present adds nothing.
 *
 * 0 is reserved: records written before versions were stamped read as 0 (the schema default).
 */
export const PARSER_VERSION = 1;
