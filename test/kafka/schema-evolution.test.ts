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

test('the registry takes the page-record schema as a BACKWARD evolution of the pinned older one, and a new reader reads old records with the defaults', async () => {
  const { registry } = kafkaInfra();
  const client = new ConfluentSchemaRegistry(registry);
  const subject = `evolution-${Date.now()}-page-records-value`;
  const oldText = JSON.stringify(JSON.parse(PINNED));
  const oldId = await client.register(subject, oldText);
  const newId = await client.register(subject, loadSchema('PageRecord').text);
  assert.notEqual(oldId, newId);
  const config = (await (await fetch(`${registry}/config/${encodeURIComponent(subject)}`)).json()) as {
    compatibilityLevel?: string;
  };
  assert.equal(config.compatibilityLevel, 'BACKWARD', 'the subject compatibility was not set to BACKWARD');

  const oldType = avro.Type.forSchema(JSON.parse(PINNED) as avro.Schema);
  const old = {
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
    charset: null,
    language: null,
    noindex: false,
  };
  const serde = new AvroSerde<PageRecord>(loadSchema('PageRecord').type, newId, new Map([[oldId, oldType]]));
  const read = serde.deserialize(frame(oldId, oldType.toBuffer(old)));
  assert.equal(read.url, old.url);
  assert.equal(read.kind, 'PAGE');
  assert.equal(read.visit, 0);
  assert.equal(read.changed, false);
  assert.equal(read.notModified, false);
  assert.equal(read.previousFetchTime, null);
  assert.equal(read.etag, null);
});

test('the registry refuses a page-record schema that is not a BACKWARD evolution (a field without a default)', async () => {
  const { registry } = kafkaInfra();
  const client = new ConfluentSchemaRegistry(registry);
  const subject = `evolution-${Date.now()}-refused-value`;
  const current = JSON.parse(loadSchema('PageRecord').text) as { fields: object[] };
  await client.register(subject, JSON.stringify(current));
  const broken = { ...current, fields: [...current.fields, { name: 'mandatory', type: 'int' }] };
  await assert.rejects(client.register(subject, JSON.stringify(broken)), (err: unknown) => {
    assert.ok(err instanceof CrawlError);
    assert.equal(err.code, 'CS_SCHEMA');
    return true;
  });
});
