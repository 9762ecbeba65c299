import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { validateCrawlConfig } from '../../processors/common/crawl-config.js';
import { crawlTopology } from '../../topology/crawl-topology.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const read = (path: string): string => readFileSync(ROOT + path, 'utf8');

const topology = crawlTopology({ config: validateCrawlConfig({}), partitions: 1, warcDir: '/nonexistent' });
const topics = [...topology.topics.keys()];
const stores = [...topology.stores].map(([name, s]) => ({ name, processors: s.processors }));

/** The first fenced block of docs/ARCHITECTURE.md: the dataflow diagram. */
function diagram(): string {
  const doc = read('docs/ARCHITECTURE.md');
  const start = doc.indexOf('```\n');
  return doc.slice(start, doc.indexOf('```\n', start + 4));
}

/** The first column of every table row of `doc` whose header's first cell is `header`, unquoted. */
function tableColumn(doc: string, header: string): string[] {
  const lines = doc.split('\n');
  const out: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (!lines[i]!.startsWith(`| ${header} |`)) continue;
    for (let j = i + 2; j < lines.length && lines[j]!.startsWith('|'); j++) {
      out.push(lines[j]!.split('|')[1]!.trim().replace(/`/g, ''));
    }
  }
  return out;
}

test('the topology declares the topics and stores the docs are checked against', () => {
  assert.ok(topics.length >= 7, topics.join());
  assert.ok(stores.length >= 11, stores.map((s) => s.name).join());
});

test('the architecture diagram names every topic and every store of the crawl topology', () => {
  const text = diagram();
  const named = (name: string): boolean => new RegExp(`(^|[^\\w-])${name}($|[^\\w-])`, 'm').test(text);
  assert.deepEqual(
    topics.filter((t) => !named(t)),
    [],
    'topics missing from the diagram',
  );
  assert.deepEqual(
    stores.filter((s) => !named(s.name)).map((s) => s.name),
    [],
    'stores missing from the diagram',
  );
});

test('docs/ARCHITECTURE.md has one table row for each topic and each store, with the store processor', () => {
  const doc = read('docs/ARCHITECTURE.md');
  assert.deepEqual(tableColumn(doc, 'topic').sort(), [...topics].sort());
  assert.deepEqual(tableColumn(doc, 'store').sort(), stores.map((s) => s.name).sort());
  for (const store of stores) {
    const row = doc.split('\n').find((l) => l.startsWith(`| \`${store.name}\` |`))!;
    assert.equal(row.split('|')[2]!.trim(), store.processors.join(', '), `processor of ${store.name}`);
  }
});

test('docs/SCHEMAS.md names every topic and the schema of each', () => {
  const doc = read('docs/SCHEMAS.md');
  for (const name of topics) {
    const spec = topology.topics.get(name)!;
    assert.match(doc, new RegExp(`\`${name}\``), `topic ${name} in docs/SCHEMAS.md`);
    assert.match(doc, new RegExp(spec.schema), `schema ${spec.schema} of ${name} in docs/SCHEMAS.md`);
  }
});
