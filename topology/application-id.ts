/**
 * The default application id: it names the embedded crawl's logs and, on Kafka, the groups,
 * changelogs and transactional ids of a crawl given no `--app-id`. Apart from crawl-topology.ts so
 * that the CLI's settings can name it without loading every processor.
 */
export const APPLICATION_ID = 'crawlstream';
