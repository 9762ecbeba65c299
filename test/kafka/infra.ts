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

/**
 * The broker's SASL_SSL listener (SCRAM-SHA-256/512 and OAUTHBEARER over TLS, a CA made at each
 * start), named by CRAWLSTREAM_SECURE_* as scripts/kafka/start.sh prints them: `oauthKey` is the
 * PEM RSA key whose JWTs the broker trusts. A secure test run without them fails.
 */
export function secureKafkaInfra(): {
  brokers: string;
  ca: string;
  username: string;
  password: string;
  oauthKey: string;
} {
  const brokers = process.env['CRAWLSTREAM_SECURE_BROKERS'];
  const ca = process.env['CRAWLSTREAM_SECURE_CA'];
  const username = process.env['CRAWLSTREAM_SECURE_USERNAME'];
  const password = process.env['CRAWLSTREAM_SECURE_PASSWORD'];
  const oauthKey = process.env['CRAWLSTREAM_SECURE_OAUTH_KEY'];
  if (brokers && ca && username && password && oauthKey) return { brokers, ca, username, password, oauthKey };
  throw new Error(
    'CRAWLSTREAM_SECURE_BROKERS, _CA, _USERNAME, _PASSWORD and _OAUTH_KEY are not set: run with `npm test -- dist/test/kafka/secure.test.js`, ' +
      'or eval "$(bash scripts/kafka/start.sh)" and export them first',
  );
}
