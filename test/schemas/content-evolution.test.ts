import { test } from 'node:test';
import assert from 'node:assert/strict';
import avro from 'avsc';
import { loadSchema } from '../../schemas/index.js';
import type { PageContent } from '../../schemas/types.js';

interface RecordSchema {
  name: string;
  fields: { name: string; type: unknown; default?: unknown }[];
}

const current = (name: 'ParsedPage' | 'PageContent') => JSON.parse(loadSchema(name).text) as RecordSchema;

/** ParsedPage as released before it carried the page's content. */
function parsedPageBefore(): RecordSchema {
  const s = current('ParsedPage');
  return { ...s, fields: s.fields.filter((f) => f.name !== 'content') };
}

const content: PageContent = {
  url: 'http://a.test/',
  site: 'a.test',
  fetchTime: 1_700_000_000_000,
  visit: 0,
  status: 200,
  title: 'Home',
  description: null,
  text: 'Hello',
  textTruncated: false,
  outlinks: [{ url: 'http://a.test/x', anchor: 'X', rel: null, kind: 'a', followed: true }],
  outlinksTruncated: false,
  headers: [{ name: 'Content-Type', value: 'text/html' }],
  headersTruncated: false,
  duplicateOf: null,
};

const parsedPage = {
  url: 'http://a.test/',
  site: 'a.test',
  host: 'a.test',
  depth: 0,
  fetchTime: 1_700_000_000_000,
  status: 200,
  contentType: 'text/html',
  contentLength: 100,
  payloadDigest: null,
  simhash: null,
  canonicalUrl: null,
  errorCode: null,
  redirectTarget: null,
  warcFile: null,
  warcOffset: null,
  warcLength: null,
  outlinks: [],
};

test("parsed-page.avsc carries page-content.avsc's record whole, so the two cannot drift apart", () => {
  const field = current('ParsedPage').fields.find((f) => f.name === 'content')!;
  assert.equal(field.default, null);
  assert.deepEqual(field.type, ['null', current('PageContent')]);
});

test('ParsedPage with content is FULL compatible with ParsedPage before it: each side reads what the other wrote', () => {
  const before = avro.Type.forSchema(parsedPageBefore() as avro.Schema);
  const now = loadSchema('ParsedPage').type;
  // new reader, old record: content is null
  const old = now.fromBuffer(before.toBuffer(parsedPage), now.createResolver(before)) as { content: unknown };
  assert.equal(old.content, null);
  // old reader, new record: the content is skipped, the rest read as written
  const written = now.toBuffer({ ...parsedPage, content });
  const read = before.fromBuffer(written, before.createResolver(now)) as { url: string; content?: unknown };
  assert.equal(read.url, parsedPage.url);
  assert.equal(read.content, undefined);
});

test('every PageContent field after url, site and fetchTime has a default, so any later version stays FULL_TRANSITIVE', () => {
  const fields = current('PageContent').fields;
  assert.deepEqual(
    fields.filter((f) => !('default' in f)).map((f) => f.name),
    ['url', 'site', 'fetchTime'],
  );
  // a reader of a later version (one more field, with a default) reads this version's records, and this version reads its records
  const later = { ...current('PageContent'), fields: [...fields, { name: 'wordCount', type: 'int', default: 0 }] };
  const laterType = avro.Type.forSchema(later as avro.Schema);
  const now = loadSchema('PageContent').type;
  const up = laterType.fromBuffer(now.toBuffer(content), laterType.createResolver(now)) as { wordCount: number };
  assert.equal(up.wordCount, 0);
  const down = now.fromBuffer(
    laterType.toBuffer({ ...content, wordCount: 7 }),
    now.createResolver(laterType),
  ) as PageContent;
  assert.equal(down.title, 'Home');
  assert.equal(down.outlinks[0]!.anchor, 'X');
});
