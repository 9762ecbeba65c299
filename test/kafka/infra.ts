/**
 * The real broker and registry of the integration tests, named by CRAWLSTREAM_BROKERS and
 * CRAWLSTREAM_REGISTRY. `npm test` (scripts/test.sh) starts them when a Kafka test is selected and
 * none is given, and stops them when the run ends; a Kafka test run without them fails.
 */
export function kafkaInfra(): { brokers: string; registry: string } {
  const brokers = process.env['CRAWLSTREAM_BROKERS'];
  const registry = process.env['CRAWLSTREAM_REGISTRY'];
  if (brokers && registry) return { brokers, registry };
  throw new Error(
    'CRAWLSTREAM_BROKERS and CRAWLSTREAM_REGISTRY are not set: run Kafka tests with `npm test -- dist/test/kafka/<file>.test.js`, ' +
      'or eval "$(bash scripts/kafka/start.sh)" first',
  );
}
