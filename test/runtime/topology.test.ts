import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CrawlError } from '../../core/errors.js';
import { stringSerde } from '../../core/serde.js';
import { Topology, type SourceNode, type ProcessorNode } from '../../runtime/topology.js';
import { keyValueStore } from '../../state/store-builder.js';

const noop = () => ({ process: () => undefined });
const topic = (name: string, partitions = 4) => ({
  name,
  partitions,
  keySerde: stringSerde,
  schema: 'LinkBatch' as const,
});

function rejects(fn: () => unknown, message: RegExp): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof CrawlError, `expected a CrawlError, got ${String(err)}`);
    assert.equal(err.code, 'CS_TOPOLOGY');
    assert.match(err.message, message);
    return true;
  });
}

/** links -> parse -> pages ; pages -> index -> out, plus a lone control source. */
function twoStage(): Topology {
  return new Topology('app')
    .addTopic(topic('links'))
    .addTopic(topic('pages'))
    .addTopic(topic('out', 2))
    .addSource('links-source', 'links')
    .addProcessor('parse', noop, ['links-source'])
    .addSink('pages-sink', 'pages', 'parse')
    .addSource('pages-source', 'pages')
    .addProcessor('index', noop, ['pages-source'])
    .addSink('out-sink', 'out', 'index');
}

test('build splits the graph at topics into sub-topologies, ordered by first source topic', () => {
  const subs = twoStage().build();
  assert.equal(subs.length, 2);
  assert.deepEqual(
    subs.map((s) => s.id),
    [0, 1],
  );
  assert.deepEqual(
    subs.map((s) => s.sourceTopics),
    [['links'], ['pages']],
  );
  assert.deepEqual(
    subs[0]!.nodes.map((n) => n.name),
    ['links-source', 'parse', 'pages-sink'],
  );
  assert.deepEqual(
    subs[1]!.nodes.map((n) => n.name),
    ['pages-source', 'index', 'out-sink'],
  );
  assert.deepEqual(
    subs.map((s) => s.partitions),
    [4, 4],
  );
});

test('build links every parent to its children', () => {
  const t = twoStage();
  t.build();
  assert.deepEqual((t.nodes.get('links-source') as SourceNode).children, ['parse']);
  assert.deepEqual((t.nodes.get('parse') as ProcessorNode).children, ['pages-sink']);
});

test('build is repeatable: a second build gives the same sub-topologies and links', () => {
  const t = twoStage().addStateStore(keyValueStore('seen', stringSerde, stringSerde), 'parse');
  const first = t.build();
  const second = t.build();
  assert.deepEqual(
    second.map((s) => s.nodes.map((n) => n.name)),
    first.map((s) => s.nodes.map((n) => n.name)),
  );
  assert.deepEqual((t.nodes.get('links-source') as SourceNode).children, ['parse']);
  assert.deepEqual((t.nodes.get('parse') as ProcessorNode).stores, ['seen']);
});

test('processors sharing a store run in one sub-topology, which carries the store', () => {
  const t = new Topology('app')
    .addTopic(topic('a'))
    .addTopic(topic('b'))
    .addSource('sa', 'a')
    .addSource('sb', 'b')
    .addProcessor('pa', noop, ['sa'])
    .addProcessor('pb', noop, ['sb'])
    .addStateStore(keyValueStore('shared', stringSerde, stringSerde), 'pa', 'pb');
  const subs = t.build();
  assert.equal(subs.length, 1);
  assert.deepEqual([...subs[0]!.sourceTopics].sort(), ['a', 'b']);
  assert.deepEqual(
    subs[0]!.stores.map((s) => s.name),
    ['shared'],
  );
  assert.equal(t.changelogTopic('shared'), 'app-shared-changelog');
});

test('without a shared store the same two chains are two sub-topologies', () => {
  const t = new Topology('app')
    .addTopic(topic('a'))
    .addTopic(topic('b'))
    .addSource('sa', 'a')
    .addSource('sb', 'b')
    .addProcessor('pa', noop, ['sa'])
    .addProcessor('pb', noop, ['sb']);
  assert.equal(t.build().length, 2);
});

test('a processor with two parents joins both sources into one sub-topology', () => {
  const t = new Topology('app')
    .addTopic(topic('a'))
    .addTopic(topic('b'))
    .addSource('sa', 'a')
    .addSource('sb', 'b')
    .addProcessor('join', noop, ['sa', 'sb']);
  const subs = t.build();
  assert.equal(subs.length, 1);
  assert.deepEqual([...subs[0]!.sourceTopics].sort(), ['a', 'b']);
});

test('build refuses an unknown parent, naming the node and the parent', () => {
  const t = new Topology('app').addTopic(topic('a')).addSource('sa', 'a').addProcessor('p', noop, ['sx']);
  rejects(() => t.build(), /processor p names unknown parent sx/);
});

test('build refuses a processor without parents and one reading from a sink', () => {
  rejects(
    () => new Topology('app').addTopic(topic('a')).addSource('sa', 'a').addProcessor('p', noop, []).build(),
    /processor p has no parent/,
  );
  rejects(
    () =>
      new Topology('app')
        .addTopic(topic('a'))
        .addSource('sa', 'a')
        .addSink('k', 'a', 'sa')
        .addProcessor('p', noop, ['k'])
        .build(),
    /p cannot read from sink k/,
  );
});

test('build refuses a source or sink on an undeclared topic', () => {
  rejects(() => new Topology('app').addSource('s', 'ghost').build(), /source s uses undeclared topic ghost/);
  rejects(
    () => new Topology('app').addTopic(topic('a')).addSource('s', 'a').addSink('k', 'ghost', 's').build(),
    /sink k uses undeclared topic ghost/,
  );
});

test('build refuses source topics of one sub-topology that are not co-partitioned', () => {
  const t = new Topology('app')
    .addTopic(topic('a', 2))
    .addTopic(topic('b', 4))
    .addSource('s', 'a', 'b')
    .addProcessor('p', noop, ['s']);
  rejects(() => t.build(), /source topics a, b .*co-partitioned/);
  const ok = new Topology('app').addTopic(topic('a', 4)).addTopic(topic('b', 4)).addSource('s', 'a', 'b');
  assert.equal(ok.build()[0]!.partitions, 4);
});

test('a second node with the same name is refused at once', () => {
  const t = new Topology('app').addTopic(topic('a')).addSource('x', 'a');
  rejects(() => t.addProcessor('x', noop, ['x']), /node x is declared twice/);
  rejects(() => t.addSink('x', 'a', 'x'), /node x is declared twice/);
});

test('a store connected to an unknown processor, or to a source, is refused', () => {
  const t = new Topology('app').addTopic(topic('a')).addSource('s', 'a').addProcessor('p', noop, ['s']);
  t.addStateStore(keyValueStore('st', stringSerde, stringSerde), 'p', 'ghost');
  rejects(() => t.build(), /store st is connected to unknown processor ghost/);
  const u = new Topology('app')
    .addTopic(topic('a'))
    .addSource('s', 'a')
    .addStateStore(keyValueStore('st', stringSerde, stringSerde), 's');
  rejects(() => u.build(), /store st is connected to unknown processor s/);
});

test('a store declared twice is refused', () => {
  const t = new Topology('app').addStateStore(keyValueStore('st', stringSerde, stringSerde));
  rejects(() => t.addStateStore(keyValueStore('st', stringSerde, stringSerde)), /state store st is declared twice/);
});

test('nodes with no source are refused', () => {
  const t = new Topology('app')
    .addTopic(topic('a'))
    .addSource('s', 'a')
    .addProcessor('p', noop, ['s'])
    .addProcessor('q', noop, ['s']);
  assert.equal(t.build().length, 1);
  const lone = new Topology('app')
    .addTopic(topic('a'))
    .addSource('s', 'a')
    .addProcessor('p', noop, ['q'])
    .addProcessor('q', noop, ['p']);
  rejects(() => lone.build(), /nodes .* have no source/);
});

test('application ids and partition counts are checked when declared', () => {
  rejects(() => new Topology('Crawl_Stream'), /application id/);
  rejects(() => new Topology('1abc'), /application id/);
  assert.equal(new Topology('crawl-2').applicationId, 'crawl-2');
  rejects(
    () => new Topology('app').addTopic(topic('a', 0)),
    /topic a needs a positive whole number of partitions, got 0/,
  );
  rejects(() => new Topology('app').addTopic(topic('a', 1.5)), /got 1.5/);
});
