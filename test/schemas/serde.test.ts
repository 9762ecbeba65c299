import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import avro from 'avsc';
import { CrawlError } from '../../core/errors.js';
import { CONFLUENT_MAGIC, encoded, frame, frameEncoded, stringSerde, unframe } from '../../core/serde.js';
import { buildSerdes, valueSubject } from '../../runtime/serdes.js';
import { Topology } from '../../runtime/topology.js';
import { FileSchemaRegistry } from '../../runtime/engines/embedded/file-schema-registry.js';
import { AvroSerde, SCHEMA_FILES, loadSchema } from '../../schemas/index.js';
import type { PageRecord } from '../../schemas/types.js';

function page(overrides: Partial<PageRecord> = {}): PageRecord {
  return {
    url: 'https://www.example.com/a?b=1',
    canonicalUrl: 'https://www.example.com/a',
    site: 'example.com',
    host: 'www.example.com',
    fetchTime: 1_700_000_000_123,
    status: 200,
    contentType: 'text/html; charset=utf-8',
    contentLength: 12_345,
    payloadDigest: 'sha1:ABCDEFGHIJKLMNOPQRSTUVWXYZ234567',
    simhash: Buffer.from('0123456789abcdef', 'hex'),
    duplicateOf: null,
    warcFile: 'crawl-00001.warc.gz',
    warcOffset: 4096,
    warcLength: 777,
    outlinkCount: 3,
    depth: 2,
    errorCode: null,
    redirectTarget: 'https://www.example.com/b',
    charset: 'Shift_JIS',
    language: 'ja',
    noindex: true,
    kind: 'PAGE',
    visit: 2,
    changed: true,
    notModified: false,
    previousFetchTime: 1_699_999_000_000,
    etag: '"v2"',
    lastModified: 'Tue, 14 Nov 2023 22:13:20 GMT',
    parserVersion: 1,
    reparsed: false,
    warcUri: null,
    ...overrides,
  };
}

function rejects(fn: () => unknown, code: string, message?: RegExp): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof CrawlError, `expected a CrawlError, got ${String(err)}`);
    assert.equal(err.code, code);
    if (message) assert.match(err.message, message);
    return true;
  });
}

test('frame writes magic byte 0, the schema id as 4 bytes big-endian, then the body', () => {
  const framed = frame(0x01020304, Buffer.from([0xaa, 0xbb]));
  assert.deepEqual([...framed], [0, 1, 2, 3, 4, 0xaa, 0xbb]);
  assert.equal(CONFLUENT_MAGIC, 0);
  assert.deepEqual(unframe(framed), { schemaId: 0x01020304, body: Buffer.from([0xaa, 0xbb]) });
});

test('frameEncoded frames what it encodes exactly as frame does, at every size and after any other', () => {
  const type = avro.Type.forSchema({
    type: 'record',
    name: 'Page',
    fields: [
      { name: 'url', type: 'string' },
      { name: 'body', type: 'bytes' },
    ],
  });
  // empty, small, past the first scratch, past the most the scratch keeps, then small again
  for (const size of [0, 100, 70_000, 3_000_000, 5, 900_000, 64 * 1024 - 20]) {
    const value = { url: `http://a.test/${size}`, body: Buffer.alloc(size, size % 251) };
    const got = frameEncoded(77, (buf, pos) => type.encode(value, buf, pos));
    assert.deepEqual(got, frame(77, type.toBuffer(value)), `a body of ${size} bytes`);
    assert.equal(got.byteLength, got.length, 'no spare bytes');
  }
  assert.throws(
    () =>
      frameEncoded(1, () => {
        throw new Error('bad value');
      }),
    /bad value/,
  );
  assert.deepEqual(
    frameEncoded(2, (buf, pos) => type.encode({ url: 'u', body: Buffer.alloc(1) }, buf, pos)),
    frame(2, type.toBuffer({ url: 'u', body: Buffer.alloc(1) })),
  );
});

test('encoded gives exactly what avsc toBuffer gives, at every size, between framed values', () => {
  const type = avro.Type.forSchema({
    type: 'record',
    name: 'Host',
    fields: [
      { name: 'host', type: 'string' },
      { name: 'robotsBody', type: ['null', 'string'] },
    ],
  });
  // toBuffer's own path changes at 1 KiB; the scratch's at 64 KiB and 1 MiB
  for (const size of [0, 1, 1023, 1024, 5_000, 70_000, 2_000_000, 3, 65_536]) {
    const value = { host: `h${size}.test`, robotsBody: size === 0 ? null : 'D'.repeat(size) };
    // a framed value in the same scratch first: its head must not leak into the unframed bytes
    frameEncoded(9, (buf, pos) => type.encode(value, buf, pos));
    const got = encoded((buf, pos) => type.encode(value, buf, pos));
    assert.deepEqual(got, type.toBuffer(value), `a body of ${size} characters`);
    assert.deepEqual({ ...(type.fromBuffer(got) as object) }, value);
  }
});

test('frame keeps schema ids above 2^31 unsigned', () => {
  const { schemaId } = unframe(frame(0xfffffffe, Buffer.alloc(0)));
  assert.equal(schemaId, 0xfffffffe);
});

test('unframe refuses a wrong magic byte and a frame shorter than 5 bytes with CS_CORRUPT_RECORD', () => {
  rejects(() => unframe(Buffer.from([1, 0, 0, 0, 1, 2])), 'CS_CORRUPT_RECORD', /first byte 1/);
  rejects(() => unframe(Buffer.from([0, 0, 0, 1])), 'CS_CORRUPT_RECORD', /length 4/);
  rejects(() => unframe(Buffer.alloc(0)), 'CS_CORRUPT_RECORD', /first byte none/);
});

test('string keys are UTF-8 both ways', () => {
  assert.deepEqual(stringSerde.serialize('bücher.de'), Buffer.from('bücher.de', 'utf8'));
  assert.equal(stringSerde.deserialize(Buffer.from('пример.рф', 'utf8')), 'пример.рф');
});

test('every schema file parses into a record named after its SchemaName', () => {
  for (const name of Object.keys(SCHEMA_FILES) as (keyof typeof SCHEMA_FILES)[]) {
    const { text, type } = loadSchema(name);
    assert.match((type as { name?: string }).name ?? '', new RegExp(`^io\\.crawlstream\\.(\\w+\\.)?${name}$`));
    assert.deepEqual(
      JSON.parse(text),
      JSON.parse(fs.readFileSync(new URL(`../../../schemas/${SCHEMA_FILES[name]}`, import.meta.url), 'utf8')),
    );
  }
});

test('AvroSerde round-trips a PageRecord in the Confluent wire format', () => {
  const serde = new AvroSerde<PageRecord>(loadSchema('PageRecord').type, 7);
  const value = page();
  const bytes = serde.serialize(value);
  assert.equal(bytes[0], 0);
  assert.equal(bytes.readUInt32BE(1), 7);
  assert.deepEqual(bytes.subarray(5), loadSchema('PageRecord').type.toBuffer(value));
  assert.deepEqual({ ...serde.deserialize(bytes) }, value);
  const nulls = page({
    canonicalUrl: null,
    simhash: null,
    warcFile: null,
    warcOffset: null,
    warcLength: null,
    redirectTarget: null,
    status: 0,
    errorCode: 'CS_DNS',
  });
  assert.deepEqual({ ...serde.deserialize(serde.serialize(nulls)) }, nulls);
});

test('AvroSerde refuses an unknown schema id with CS_CORRUPT_RECORD', () => {
  const serde = new AvroSerde<PageRecord>(loadSchema('PageRecord').type, 7);
  const other = frame(8, loadSchema('PageRecord').type.toBuffer(page()));
  rejects(() => serde.deserialize(other), 'CS_CORRUPT_RECORD', /unknown schema id 8/);
});

test('AvroSerde refuses a wrong magic byte with CS_CORRUPT_RECORD', () => {
  const serde = new AvroSerde<PageRecord>(loadSchema('PageRecord').type, 7);
  const bytes = serde.serialize(page());
  bytes[0] = 1;
  rejects(() => serde.deserialize(bytes), 'CS_CORRUPT_RECORD');
});

test('AvroSerde refuses a truncated body, and trailing bytes, with CS_CORRUPT_RECORD', () => {
  const serde = new AvroSerde<PageRecord>(loadSchema('PageRecord').type, 7);
  const bytes = serde.serialize(page());
  rejects(() => serde.deserialize(bytes.subarray(0, bytes.length - 1)), 'CS_CORRUPT_RECORD', /schema id 7/);
  rejects(() => serde.deserialize(bytes.subarray(0, 6)), 'CS_CORRUPT_RECORD');
  rejects(() => serde.deserialize(Buffer.concat([bytes, Buffer.from([0])])), 'CS_CORRUPT_RECORD');
});

test('AvroSerde refuses to serialize a value that does not match the schema with CS_SCHEMA', () => {
  const serde = new AvroSerde<PageRecord>(loadSchema('PageRecord').type, 7);
  rejects(() => serde.serialize({ ...page(), status: 'ok' } as unknown as PageRecord), 'CS_SCHEMA', /PageRecord/);
  rejects(() => serde.serialize({ url: 'https://x.test/' } as unknown as PageRecord), 'CS_SCHEMA');
  rejects(() => serde.serialize(page({ simhash: Buffer.alloc(7) })), 'CS_SCHEMA');
});

/** PageRecord as it was before `redirectTarget` (a defaulted field) was added. */
function olderPageRecordType(): avro.Type {
  const schema = JSON.parse(loadSchema('PageRecord').text) as { fields: { name: string }[] };
  const fields = schema.fields.filter((f) => f.name !== 'redirectTarget');
  assert.equal(fields.length, schema.fields.length - 1);
  return avro.Type.forSchema({ ...schema, fields } as avro.Schema);
}

test('a PageRecord written with an older writer schema resolves to the current one, the new field defaulted', () => {
  const older = olderPageRecordType();
  const { redirectTarget: _, ...oldValue } = page();
  const bytes = frame(3, older.toBuffer(oldValue));
  const current = new AvroSerde<PageRecord>(loadSchema('PageRecord').type, 4, new Map([[3, older]]));
  assert.deepEqual({ ...current.deserialize(bytes) }, { ...oldValue, redirectTarget: null });
  // without the writer schema the same bytes are refused, not misread
  rejects(
    () => new AvroSerde<PageRecord>(loadSchema('PageRecord').type, 4).deserialize(bytes),
    'CS_CORRUPT_RECORD',
    /unknown schema id 3/,
  );
});

test('a PageRecord written before charset, language and noindex reads them as null, null and false', () => {
  const schema = JSON.parse(loadSchema('PageRecord').text) as { fields: { name: string }[] };
  const added = new Set(['charset', 'language', 'noindex']);
  const older = avro.Type.forSchema({
    ...schema,
    fields: schema.fields.filter((f) => !added.has(f.name)),
  } as avro.Schema);
  const { charset: _c, language: _l, noindex: _n, ...oldValue } = page();
  const current = new AvroSerde<PageRecord>(loadSchema('PageRecord').type, 4, new Map([[3, older]]));
  assert.deepEqual(
    { ...current.deserialize(frame(3, older.toBuffer(oldValue))) },
    { ...oldValue, charset: null, language: null, noindex: false },
  );
});

test('buildSerdes reads values written under an earlier version of the topic subject', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'crawlstream-serdes-'));
  try {
    const registry = new FileSchemaRegistry(dir);
    const older = olderPageRecordType();
    const oldId = await registry.register(valueSubject('pages'), JSON.stringify(older.schema()));
    const topology = new Topology('serde-test').addTopic({
      name: 'pages',
      partitions: 1,
      keySerde: stringSerde,
      schema: 'PageRecord',
    });
    const serdes = await buildSerdes(topology, registry);
    const currentId = serdes.schemaIds.get('pages')!;
    assert.notEqual(currentId, oldId);
    assert.equal(
      await registry.register(valueSubject('pages'), loadSchema('PageRecord').text),
      currentId,
      'registering is idempotent',
    );
    const { redirectTarget: _, ...oldValue } = page();
    const value = serdes.value('pages').deserialize(frame(oldId, older.toBuffer(oldValue)));
    assert.deepEqual({ ...(value as PageRecord) }, { ...oldValue, redirectTarget: null });
    assert.equal(serdes.value('pages').serialize(page()).readUInt32BE(1), currentId);
    rejects(() => serdes.value('nope'), 'CS_TOPOLOGY');
    rejects(() => serdes.key('nope'), 'CS_TOPOLOGY');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
