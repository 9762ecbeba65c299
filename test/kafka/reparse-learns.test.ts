import { test } from 'node:test';
import assert from 'node:assert/strict';
import { tmpdir } from 'node:os';
import avro from 'avsc';
import kafkajs from 'kafkajs';
import { frame } from '../../core/serde.js';
import { kafkaOutput } from '../../cli/reparse-output.js';
import { validateCrawlConfig } from '../../processors/common/crawl-config.js';
import { ConfluentSchemaRegistry } from '../../runtime/engines/kafka/confluent-registry.js';
import { KafkaPort } from '../../runtime/engines/kafka/kafka-port.js';
import { topicDefinitions } from '../../runtime/engines/kafka/topics.js';
import { valueSubject } from '../../runtime/serdes.js';
import { loadSchema } from '../../schemas/index.js';
import type { PageRecord } from '../../schemas/types.js';
import { crawlTopology, TOPICS } from '../../topology/crawl-topology.js';
import { kafkaInfra } from './infra.js';

/** A reparsed page record of parser version 9, archived at `warcFile`@`warcOffset`. */
function reparsed(warcFile: string, warcOffset: number): PageRecord {
  return {
    url: `http://learn.test/${warcOffset}`,
    canonicalUrl: null,
    site: 'learn.test',
    host: 'learn.test',
    fetchTime: 1_700_000_000_000,
    status: 200,
    contentType: 'text/html',
    contentLength: 10,
    payloadDigest: null,
    simhash: null,
    duplicateOf: null,
    warcFile,
    warcOffset,
    warcLength: 100,
    outlinkCount: 0,
    depth: 0,
    errorCode: null,
    redirectTarget: null,
    charset: null,
    language: null,
    noindex: false,
    kind: 'PAGE',
    visit: 0,
    changed: false,
    notModified: false,
    previousFetchTime: null,
    etag: null,
    lastModified: null,
    parserVersion: 9,
    reparsed: true,
    warcUri: null,
  };
}

test(
  'replay reparse on Kafka reads page records of a schema version registered after it started (a newer crawler mid-upgrade): they count as already present',
  { timeout: 120_000 },
  async (t) => {
    const { brokers, registry } = kafkaInfra();
    const applicationId = `reparse-learn-${Date.now().toString(36)}`;
    const topology = crawlTopology({
      config: validateCrawlConfig({}),
      partitions: 4,
      warcDir: tmpdir(),
      applicationId,
    });
    topology.build();
    const outputs = new Set(
      [TOPICS.pageRecords, TOPICS.pageContent, TOPICS.links].map((n) => topology.physicalTopic(n)),
    );
    const port = new KafkaPort([brokers], 'crawlstream-test');
    const admin = await port.admin();
    try {
      await admin.createTopics(topicDefinitions(topology).filter((d) => outputs.has(d.name)));
    } finally {
      await admin.close();
      await port.close();
    }
    const output = await kafkaOutput([brokers], registry, topology, {});
    t.after(() => output.close());

    // after the reparse opened its output: a newer version of page-records, its field defaulted
    const topic = topology.physicalTopic(TOPICS.pageRecords);
    const client = new ConfluentSchemaRegistry(registry);
    const own = loadSchema('PageRecord');
    const ownId = await client.register(valueSubject(topic), own.text);
    const newer = JSON.parse(own.text) as { fields: object[] };
    newer.fields.push({ name: 'reparseLearnNote', type: ['null', 'string'], default: null });
    const newerId = await client.register(valueSubject(topic), JSON.stringify(newer));
    assert.notEqual(newerId, ownId);
    const newerType = avro.Type.forSchema(newer as avro.Schema);
    const producer = new kafkajs.Kafka({ brokers: [brokers], logLevel: kafkajs.logLevel.NOTHING }).producer();
    await producer.connect();
    try {
      await producer.send({
        topic,
        messages: [
          { key: 'learn.test', value: frame(ownId, own.type.toBuffer(reparsed('own.warc.gz', 1))) },
          {
            key: 'learn.test',
            value: frame(newerId, newerType.toBuffer({ ...reparsed('newer.warc.gz', 2), reparseLearnNote: 'v2' })),
          },
        ],
      });
    } finally {
      await producer.disconnect();
    }

    assert.deepEqual([...(await output.present(9))].sort(), ['newer.warc.gz@2', 'own.warc.gz@1']);
  },
);
