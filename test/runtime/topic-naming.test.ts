import { test } from 'node:test';
import assert from 'node:assert/strict';
import { tmpdir } from 'node:os';
import { isCrawlError } from '../../core/errors.js';
import { validateCrawlConfig } from '../../processors/common/crawl-config.js';
import { toTopicMessages } from '../../runtime/engines/kafka/kafka-common.js';
import { topicDefinitions } from '../../runtime/engines/kafka/topics.js';
import { buildSerdes } from '../../runtime/serdes.js';
import { Topology } from '../../runtime/topology.js';
import type { SchemaRegistry } from '../../schemas/index.js';
import { APPLICATION_ID, crawlTopology, TOPICS } from '../../topology/crawl-topology.js';

const topology = (applicationId?: string) =>
  crawlTopology({
    config: validateCrawlConfig({}),
    partitions: 4,
    warcDir: tmpdir(),
    ...(applicationId !== undefined ? { applicationId } : {}),
  });

test('the default application id keeps the bare topic names, changelogs and dead letters of every existing deployment', () => {
  const t = topology();
  assert.equal(t.applicationId, APPLICATION_ID);
  for (const name of Object.values(TOPICS)) {
    assert.equal(t.physicalTopic(name), name);
    assert.equal(t.logicalTopic(name), name);
  }
  const names = topicDefinitions(t).map((d) => d.name);
  assert.ok(names.includes('links') && names.includes('page-records'));
  assert.ok(names.includes('crawlstream-dead-letters'));
  assert.ok(names.filter((n) => n.endsWith('-changelog')).every((n) => n.startsWith('crawlstream-')));
});

test('another application id prefixes every data topic with "<id>." and names changelogs and dead letters by the id', () => {
  const t = topology('news');
  assert.equal(t.physicalTopic(TOPICS.links), 'news.links');
  assert.equal(t.physicalTopic(TOPICS.pageRecords), 'news.page-records');
  assert.equal(t.changelogTopic('seen'), 'news-seen-changelog');
  const names = topicDefinitions(t).map((d) => d.name);
  const data = names.filter((n) => !n.endsWith('-changelog') && n !== 'news-dead-letters');
  assert.deepEqual(
    data.sort(),
    Object.values(TOPICS)
      .map((n) => `news.${n}`)
      .sort(),
  );
  assert.ok(names.includes('news-dead-letters'));
  assert.ok(
    names.every((n) => n.startsWith('news.') || n.startsWith('news-')),
    names.join(', '),
  );
});

test('logical and cluster names round-trip; names that are not declared data topics pass unchanged both ways', () => {
  const t = topology('news');
  for (const name of Object.values(TOPICS)) assert.equal(t.logicalTopic(t.physicalTopic(name)), name);
  for (const other of ['news-seen-changelog', 'news-dead-letters', 'links', 'other.links', 'news.unknown'])
    assert.equal(t.logicalTopic(other), other);
  assert.equal(t.physicalTopic('news-dead-letters'), 'news-dead-letters');
  assert.equal(t.physicalTopic('undeclared'), 'undeclared');
});

test('a topic prefix that is not "<lower-case id>." is refused', () => {
  assert.throws(
    () => new Topology('news', { topicPrefix: 'News' }),
    (err: unknown) => isCrawlError(err) && err.code === 'CS_TOPOLOGY' && /topic prefix must be/.test(err.message),
  );
});

test('records sent to Kafka carry the cluster name of their logical topic', () => {
  const t = topology('news');
  const record = { partition: 0, key: Buffer.from('k'), value: null, timestamp: 1 };
  const messages = toTopicMessages(
    [
      { topic: TOPICS.links, ...record },
      { topic: 'news-dead-letters', ...record },
    ],
    t,
  );
  assert.deepEqual(
    messages.map((m) => m.topic),
    ['news.links', 'news-dead-letters'],
  );
});

test('registry subjects follow the cluster topic name, so two application ids never share a subject', async () => {
  const subjects = new Set<string>();
  const registry: SchemaRegistry = {
    register: async (subject) => {
      subjects.add(subject);
      return subjects.size;
    },
    schemaById: async () => '"null"',
  };
  await buildSerdes(topology('news'), registry);
  assert.ok(subjects.has('news.page-records-value'), [...subjects].join(', '));
  assert.ok(![...subjects].includes('page-records-value'));
  subjects.clear();
  await buildSerdes(topology(), registry);
  assert.ok(subjects.has('page-records-value'));
});
