import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import avro from 'avsc';
import { CrawlError } from '../../core/errors.js';
import { frame } from '../../core/serde.js';
import { ConfluentSchemaRegistry } from '../../runtime/engines/kafka/confluent-registry.js';
import { AvroSerde, loadSchema } from '../../schemas/index.js';
import type { PageRecord } from '../../schemas/types.js';
import { kafkaInfra } from './infra.js';

// the page-record schema as released before the freshness fields, pinned
const PINNED = readFileSync(new URL('../../../test/schemas/pinned/page-record.v1.avsc', import.meta.url), 'utf8');

interface RecordSchema {
  fields: { name: string; type: unknown; default?: unknown }[];
}
const pinned = () => JSON.parse(PINNED) as RecordSchema;
const current = () => JSON.parse(loadSchema('PageRecord').text) as RecordSchema;
const text = (schema: RecordSchema) => JSON.stringify(schema);

let n = 0;
/** A subject of its own per case (the registry outlives a test run when CRAWLSTREAM_REGISTRY is given). */
const subject = (name: string) => `evolution-${Date.now()}-${n++}-${name}-value`;

async function level(registry: string, name: string): Promise<string | undefined> {
  const res = await fetch(`${registry}/config/${encodeURIComponent(name)}`);
  return ((await res.json()) as { compatibilityLevel?: string }).compatibilityLevel;
}

function refusedAsIncompatible(err: unknown): boolean {
  assert.ok(err instanceof CrawlError, `not a CrawlError: ${String(err)}`);
  assert.equal(err.code, 'CS_SCHEMA');
  // the registry's own verdict (Apicurio: RuleViolationException, 409), not a transport failure
  assert.match(err.message, /incompatible/i);
  return true;
}

/** A record as the pinned schema's writers wrote it. */
const oldRecord = {
  url: 'http://old.test/a',
  canonicalUrl: null,
  site: 'old.test',
  host: 'old.test',
  fetchTime: 1_700_000_000_000,
  status: 200,
  contentType: 'text/html',
  contentLength: 10,
  payloadDigest: null,
  simhash: null,
  duplicateOf: null,
  warcFile: null,
  warcOffset: null,
  warcLength: null,
  outlinkCount: 0,
  depth: 1,
  errorCode: null,
  redirectTarget: null,
};

test('the registry takes the page-record schema as a FULL_TRANSITIVE evolution of the pinned older one: each reader reads the other’s records', async () => {
  const { registry } = kafkaInfra();
  const client = new ConfluentSchemaRegistry(registry);
  const name = subject('page-records');
  const oldId = await client.register(name, text(pinned()));
  const newId = await client.register(name, loadSchema('PageRecord').text);
  assert.notEqual(oldId, newId);
  assert.equal(await level(registry, name), 'FULL_TRANSITIVE', 'the subject compatibility was not set');

  // both readers take the writer's schema from the registry by the id in the frame, as consumers do
  const oldType = avro.Type.forSchema(JSON.parse(await client.schemaById(oldId)) as avro.Schema);
  const newType = avro.Type.forSchema(JSON.parse(await client.schemaById(newId)) as avro.Schema);

  // a new reader, an old record: the fields added since read as their defaults
  const newReader = new AvroSerde<PageRecord>(loadSchema('PageRecord').type, newId, new Map([[oldId, oldType]]));
  const read = newReader.deserialize(frame(oldId, oldType.toBuffer(oldRecord)));
  assert.equal(read.url, oldRecord.url);
  assert.equal(read.kind, 'PAGE');
  assert.equal(read.visit, 0);
  assert.equal(read.changed, false);
  assert.equal(read.notModified, false);
  assert.equal(read.previousFetchTime, null);
  assert.equal(read.etag, null);
  assert.equal(read.noindex, false);

  // an old reader (an instance not yet upgraded), a new record: it reads what it knows, skips the rest
  const fresh: PageRecord = { ...read, url: 'http://new.test/b', kind: 'SITEMAP', visit: 3, changed: true };
  const oldReader = new AvroSerde<typeof oldRecord>(oldType, oldId, new Map([[newId, newType]]));
  const back = oldReader.deserialize(newReader.serialize(fresh));
  assert.deepEqual({ ...back }, { ...oldRecord, url: 'http://new.test/b' });
});

test('the registry refuses a page-record schema that adds a field without a default (a new reader could not read old records)', async () => {
  const { registry } = kafkaInfra();
  const client = new ConfluentSchemaRegistry(registry);
  const name = subject('added');
  await client.register(name, text(current()));
  const broken = { ...current(), fields: [...current().fields, { name: 'mandatory', type: 'int' }] };
  await assert.rejects(client.register(name, text(broken)), refusedAsIncompatible);
});

test('the registry refuses a page-record schema that drops a field without a default, which BACKWARD would take (an old reader could not read new records)', async () => {
  const { registry } = kafkaInfra();
  const client = new ConfluentSchemaRegistry(registry);
  const name = subject('dropped');
  await client.register(name, text(current()));
  const dropped = { ...current(), fields: current().fields.filter((f) => f.name !== 'status') };
  assert.ok(!('default' in current().fields.find((f) => f.name === 'status')!));
  await assert.rejects(client.register(name, text(dropped)), refusedAsIncompatible);

  // the same change on a BACKWARD subject goes through: the refusal above is the level's doing
  const backward = subject('dropped-backward');
  const res = await fetch(`${registry}/config/${encodeURIComponent(backward)}`, {
    method: 'PUT',
    headers: { 'content-type': 'application/vnd.schemaregistry.v1+json' },
    body: JSON.stringify({ compatibility: 'BACKWARD' }),
  });
  assert.ok(res.ok, `PUT config answered ${res.status}`);
  for (const schema of [current(), dropped]) {
    const post = await fetch(`${registry}/subjects/${encodeURIComponent(backward)}/versions`, {
      method: 'POST',
      headers: { 'content-type': 'application/vnd.schemaregistry.v1+json' },
      body: JSON.stringify({ schema: text(schema) }),
    });
    assert.equal(post.status, 200, await post.text());
  }
});

test('the registry checks a new version against every older one, not the latest only (transitive)', async () => {
  const { registry } = kafkaInfra();
  const client = new ConfluentSchemaRegistry(registry);
  const name = subject('transitive');
  await client.register(name, text(pinned()));
  await client.register(name, text(current()));
  // `visit` came with a default after the pinned version; without it a reader of this version
  // still reads the current version's records (which carry visit), but no longer the pinned ones'
  assert.ok(!pinned().fields.some((f) => f.name === 'visit'));
  const third = {
    ...current(),
    fields: current().fields.map((f) => (f.name === 'visit' ? { name: f.name, type: f.type } : f)),
  };
  await assert.rejects(client.register(name, text(third)), refusedAsIncompatible);
});

test('a subject an older crawler left BACKWARD is raised to FULL_TRANSITIVE before the new version is checked', async () => {
  const { registry } = kafkaInfra();
  const name = subject('raised');
  // as an older crawler left it: BACKWARD, a version with a field that has no default
  const headers = { 'content-type': 'application/vnd.schemaregistry.v1+json' };
  await fetch(`${registry}/config/${encodeURIComponent(name)}`, {
    method: 'PUT',
    headers,
    body: JSON.stringify({ compatibility: 'BACKWARD' }),
  });
  const older = { ...current(), fields: [...current().fields, { name: 'legacy', type: 'string' }] };
  const post = await fetch(`${registry}/subjects/${encodeURIComponent(name)}/versions`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ schema: text(older) }),
  });
  assert.equal(post.status, 200, await post.text());
  // dropping `legacy` is BACKWARD, not FORWARD: the older crawler's instances could not read these records
  await assert.rejects(new ConfluentSchemaRegistry(registry).register(name, text(current())), refusedAsIncompatible);
  assert.equal(await level(registry, name), 'FULL_TRANSITIVE');
});

test('an enum symbol is appended FULL_TRANSITIVE only because FetchKind has a default an old reader falls back to', async () => {
  const { registry } = kafkaInfra();
  const client = new ConfluentSchemaRegistry(registry);
  const withSymbol = (schema: RecordSchema, defaulted: boolean): RecordSchema => ({
    ...schema,
    fields: schema.fields.map((f) => {
      if (f.name !== 'kind') return f;
      const kind = { ...(f.type as { symbols: string[]; default?: string }) };
      if (!defaulted) delete kind.default;
      return { ...f, type: { ...kind, symbols: [...kind.symbols, 'ARCHIVE'] } };
    }),
  });
  const name = subject('enum');
  await client.register(name, text(current()));
  await client.register(name, text(withSymbol(current(), true)));
  // the same step from a FetchKind without a default is refused
  const noDefault = subject('enum-no-default');
  const bare = withSymbol(current(), false);
  const symbols = (bare.fields.find((f) => f.name === 'kind')!.type as { symbols: string[] }).symbols;
  const before = {
    ...bare,
    fields: bare.fields.map((f) =>
      f.name === 'kind' ? { ...f, type: { ...(f.type as object), symbols: symbols.slice(0, -1) } } : f,
    ),
  };
  await client.register(noDefault, text(before));
  await assert.rejects(client.register(noDefault, text(bare)), refusedAsIncompatible);
});

test('instances that register a new subject at the same moment all start (the registry answers all but one rule creation 409)', async () => {
  const { registry } = kafkaInfra();
  const name = subject('concurrent');
  const schema = loadSchema('PageRecord').text;
  const ids = await Promise.all(
    Array.from({ length: 8 }, () => new ConfluentSchemaRegistry(registry).register(name, schema)),
  );
  assert.equal(new Set(ids).size, 1, `one schema, one id: ${ids.join(', ')}`);
  assert.equal(await level(registry, name), 'FULL_TRANSITIVE');
});
