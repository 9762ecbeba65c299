import { test } from 'node:test';
import assert from 'node:assert/strict';
import avro from 'avsc';
import { CrawlError } from '../../core/errors.js';
import { frame, stringSerde } from '../../core/serde.js';
import { buildSerdes, valueSubject } from '../../runtime/serdes.js';
import { Topology } from '../../runtime/topology.js';
import { loadSchema } from '../../schemas/index.js';
import { MemoryRegistry } from '../../schemas/memory-registry.js';
import type { LinkBatch } from '../../schemas/types.js';

const topology = () =>
  new Topology('learn')
    .addTopic({ name: 'in', partitions: 1, keySerde: stringSerde, schema: 'LinkBatch' })
    .addSource('in-source', 'in')
    .addProcessor('none', () => ({ process: () => undefined }), ['in-source']);

const batch = (site: string): LinkBatch => ({
  site,
  sourceUrl: null,
  discoveredAt: 1,
  links: [],
  fromFeed: false,
  fingerprints: null,
});

/** The LinkBatch schema with one more field (default ''): what a newer version writes. */
function newer(): { text: string; type: avro.Type } {
  const schema = JSON.parse(loadSchema('LinkBatch').text) as { fields: object[] };
  schema.fields.push({ name: 'note', type: 'string', default: '' });
  return { text: JSON.stringify(schema), type: avro.Type.forSchema(schema as avro.Schema) };
}

/** A registry whose lookups fail (unreachable) while `down` is true. */
class FlakyRegistry extends MemoryRegistry {
  down = false;
  asked = 0;
  override async schemaById(id: number): Promise<string> {
    this.asked++;
    if (this.down) throw new CrawlError('CS_REGISTRY', 'registry unreachable');
    return super.schemaById(id);
  }
}

test('a version registered after the serdes were built is learned from the registry, once, and then read', async () => {
  const registry = new FlakyRegistry();
  const serdes = await buildSerdes(topology(), registry);
  const v2 = newer();
  const id = await registry.register(valueSubject('in'), v2.text);
  const bytes = frame(id, v2.type.toBuffer({ ...batch('a.test'), note: 'x' }));
  assert.throws(() => serdes.value('in').deserialize(bytes), { code: 'CS_CORRUPT_RECORD' }, 'unknown before');
  await serdes.learnWriters([
    { topic: 'in', value: bytes },
    { topic: 'in', value: bytes },
  ]);
  assert.deepEqual({ ...(serdes.value('in').deserialize(bytes) as LinkBatch) }, batch('a.test'));
  await serdes.learnWriters([{ topic: 'in', value: bytes }]);
  assert.equal(registry.asked, 1, 'asked once for the id, however many records carry it');
});

test('while the registry cannot be asked, learnWriters rejects and gives up nothing; the next call learns', async () => {
  const registry = new FlakyRegistry();
  const serdes = await buildSerdes(topology(), registry);
  const v2 = newer();
  const id = await registry.register(valueSubject('in'), v2.text);
  const bytes = frame(id, v2.type.toBuffer({ ...batch('b.test'), note: '' }));
  registry.down = true;
  await assert.rejects(serdes.learnWriters([{ topic: 'in', value: bytes }]), { code: 'CS_REGISTRY' });
  registry.down = false;
  await serdes.learnWriters([{ topic: 'in', value: bytes }]);
  assert.equal((serdes.value('in').deserialize(bytes) as LinkBatch).site, 'b.test');
});

test('an id the registry does not know, or a writer this version cannot resolve, is said once and stays corrupt', async () => {
  const registry = new FlakyRegistry();
  const serdes = await buildSerdes(topology(), registry);
  const said: string[] = [];
  const unknown = frame(9_999, loadSchema('LinkBatch').type.toBuffer(batch('c.test')));
  // a writer whose record has another name cannot be resolved to LinkBatch
  const alien = await registry.register('other', JSON.stringify({ type: 'record', name: 'Alien', fields: [] }));
  const unreadable = frame(alien, Buffer.alloc(0));
  for (let i = 0; i < 2; i++)
    await serdes.learnWriters(
      [
        { topic: 'in', value: unknown },
        { topic: 'in', value: unreadable },
        { topic: 'in', value: null },
        { topic: 'in', value: Buffer.from('no frame') },
      ],
      (line) => said.push(line),
    );
  assert.equal(said.length, 2, said.join('\n'));
  assert.match(said[0]!, /schema id 9999 .* unknown to the registry/);
  assert.match(said[1]!, new RegExp(`schema id ${alien} cannot be read as io.crawlstream.LinkBatch`));
  assert.equal(registry.asked, 2, 'neither is asked for again');
  assert.throws(() => serdes.value('in').deserialize(unknown), { code: 'CS_CORRUPT_RECORD' });
  assert.throws(() => serdes.value('in').deserialize(unreadable), { code: 'CS_CORRUPT_RECORD' });
});
