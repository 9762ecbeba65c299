import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import avro from 'avsc';
import kafkajs from 'kafkajs';
import { M } from '../../core/metric-catalogue.js';
import { frame, stringSerde } from '../../core/serde.js';
import { ConfluentSchemaRegistry } from '../../runtime/engines/kafka/confluent-registry.js';
import { KafkaEngine } from '../../runtime/engines/kafka/kafka-engine.js';
import { KafkaPort } from '../../runtime/engines/kafka/kafka-port.js';
import { topicDefinitions } from '../../runtime/engines/kafka/topics.js';
import { valueSubject } from '../../runtime/serdes.js';
import { Topology } from '../../runtime/topology.js';
import { loadSchema } from '../../schemas/index.js';
import type { LinkBatch } from '../../schemas/types.js';
import { removeDir, sleep, tempDir } from '../e2e/harness.js';
import { kafkaInfra } from './infra.js';

const batch = (site: string): LinkBatch => ({
  site,
  sourceUrl: null,
  discoveredAt: 1_700_000_000_000,
  links: [],
  fromFeed: false,
  fingerprints: null,
});

test(
  'a running instance reads records of a schema version registered after it started (a newer instance in a rolling upgrade): the writer schema comes from the registry at run time, nothing is dead-lettered but an id the registry does not know',
  { timeout: 180_000 },
  async (t) => {
    const { brokers, registry } = kafkaInfra();
    const applicationId = `rolling-${Date.now().toString(36)}`;
    const seen: LinkBatch[] = [];
    const topology = new Topology(applicationId, { topicPrefix: `${applicationId}.` })
      .addTopic({ name: 'in', partitions: 1, keySerde: stringSerde, schema: 'LinkBatch' })
      .addSource('in-source', 'in')
      .addProcessor('keep', () => ({ process: (r) => void seen.push(r.value as LinkBatch) }), ['in-source']);
    const port = new KafkaPort([brokers], 'crawlstream-test');
    const admin = await port.admin();
    try {
      await admin.createTopics(topicDefinitions(topology));
    } finally {
      await admin.close();
    }
    const dir = tempDir('rolling-schema');
    t.after(() => removeDir(dir));
    const engine = new KafkaEngine(topology, {
      brokers: [brokers],
      registryUrl: registry,
      dataDir: join(dir, 'data'),
      sessionTimeoutMs: 6_000,
    });
    t.after(() => engine.stop().catch(() => undefined));
    await engine.start();

    // the newer version, registered after the instance started: one field appended with a
    // default, which FULL_TRANSITIVE takes; its writers fill it
    const subject = valueSubject(topology.physicalTopic('in'));
    const client = new ConfluentSchemaRegistry(registry);
    const ownText = loadSchema('LinkBatch').text;
    const ownId = await client.register(subject, ownText);
    const newer = JSON.parse(ownText) as { fields: object[] };
    newer.fields.push({ name: 'rollingTestNote', type: 'string', default: '' });
    const newerId = await client.register(subject, JSON.stringify(newer));
    assert.notEqual(newerId, ownId, 'a new version has a new id');
    const newerType = avro.Type.forSchema(newer as avro.Schema);
    const ownType = loadSchema('LinkBatch').type;

    const producer = new kafkajs.Kafka({ brokers: [brokers], logLevel: kafkajs.logLevel.NOTHING }).producer();
    await producer.connect();
    try {
      await producer.send({
        topic: topology.physicalTopic('in'),
        messages: [
          { key: 'old.test', value: frame(ownId, ownType.toBuffer(batch('old.test'))) },
          {
            key: 'new.test',
            value: frame(newerId, newerType.toBuffer({ ...batch('new.test'), rollingTestNote: 'v2' })),
          },
          // an id no registry handed out: still corrupt, dead-lettered, and it holds nothing up
          { key: 'bad.test', value: frame(2_000_000_001, ownType.toBuffer(batch('bad.test'))) },
          {
            key: 'after.test',
            value: frame(newerId, newerType.toBuffer({ ...batch('after.test'), rollingTestNote: 'v2' })),
          },
        ],
      });
    } finally {
      await producer.disconnect();
    }

    const deadline = Date.now() + 90_000;
    while (seen.length < 3 && Date.now() < deadline) await sleep(200);
    assert.deepEqual(
      seen.map((b) => b.site),
      ['old.test', 'new.test', 'after.test'],
      'the newer version’s records were read, in order',
    );
    assert.deepEqual({ ...seen[1] }, batch('new.test'), 'read as this version’s schema: the newer field dropped');
    const deadline2 = Date.now() + 30_000;
    while (engine.metrics.counter(M.deadLetters, 'CS_CORRUPT_RECORD') < 1 && Date.now() < deadline2) await sleep(200);
    assert.equal(engine.metrics.counter(M.deadLetters, 'CS_CORRUPT_RECORD'), 1, 'only the unknown id');
  },
);
