import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, normalize, sep } from 'node:path';
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

/** Every doc whose links and file names are checked: the README, CONTRIBUTING.md and docs/*.md. */
const DOCS = [
  'README.md',
  'CONTRIBUTING.md',
  ...readdirSync(ROOT + 'docs')
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** `doc` without its fenced code blocks (a `# comment` there is no heading, a `](x)` no link). */
const prose = (doc: string): string => doc.replace(/^```[^]*?^```$/gm, '');

/** GitHub's anchor of each heading of `doc`: lower case, punctuation dropped, spaces as hyphens. */
function anchors(doc: string): Set<string> {
  const out = new Set<string>();
  for (const [, heading] of prose(doc).matchAll(/^#{1,6} (.+)$/gm)) {
    const slug = heading!
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    let unique = slug;
    for (let n = 1; out.has(unique); n++) unique = `${slug}-${n}`;
    out.add(unique);
  }
  return out;
}

test('every relative link of the docs names a file that exists, and a heading of it when it has an anchor', () => {
  const broken: string[] = [];
  for (const path of DOCS) {
    const dir = dirname(path);
    for (const [, target] of prose(read(path)).matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/.test(target!)) continue;
      const [file, anchor] = target!.split('#') as [string, string | undefined];
      const resolved = file === '' ? path : normalize(join(dir, file));
      if (!existsSync(ROOT + resolved)) {
        broken.push(`${path}: ${target} (no ${resolved})`);
      } else if (anchor !== undefined && !anchors(read(resolved)).has(anchor)) {
        broken.push(`${path}: ${target} (no heading #${anchor} in ${resolved})`);
      }
    }
  }
  assert.deepEqual(broken, []);
});

test('every source, test or script path the docs name in backquotes exists', () => {
  const tops = 'core|schemas|state|runtime|processors|topology|cli|synthetic-web|bench|test|scripts|deploy|docs';
  const missing: string[] = [];
  for (const path of DOCS) {
    for (const [, named] of prose(read(path)).matchAll(new RegExp(`\`((?:${tops})/[^\`\\s]*)\``, 'g'))) {
      if (/[<>*{}$]/.test(named!)) continue; // a pattern or a placeholder, not a file
      const file = named!.replace(/\/$/, '').replace(/[:#].*$/, '');
      // a compiled test (`dist/test/x.test.js` run as `test/x.test.js`) or a bench named without `.ts`
      const candidates = [file, file.replace(/\.js$/, '.ts'), `${file}.ts`];
      if (!candidates.some((c) => existsSync(ROOT + c))) missing.push(`${path}: ${named}`);
    }
  }
  assert.deepEqual(missing, []);
});

/** The shipped TypeScript files, relative to the root, as `.dependency-cruiser.cjs` sees them. */
function shippedFiles(): string[] {
  const folders = ['core', 'schemas', 'state', 'runtime', 'processors', 'topology', 'cli', 'synthetic-web', 'bench'];
  return folders.flatMap((folder) =>
    (readdirSync(ROOT + folder, { recursive: true }) as string[])
      .filter((f) => f.endsWith('.ts'))
      .map((f) => `${folder}/${f.split(sep).join('/')}`),
  );
}

interface CruiserRule {
  name: string;
  comment?: string;
  from: { pathNot?: string[] };
}

test("CONTRIBUTING.md's door table names the libraries and files .dependency-cruiser.cjs lets import them", () => {
  const rules = (createRequire(ROOT)('./.dependency-cruiser.cjs') as { forbidden: CruiserRule[] }).forbidden;
  const doors = rules.filter((r) => r.name.startsWith('one-door-'));
  assert.ok(doors.length >= 6, doors.map((r) => r.name).join());
  const shipped = shippedFiles();
  const enforced = new Map<string, string[]>();
  for (const rule of doors) {
    const pkg = rule.comment!.split(' is imported only by ')[0]!;
    const door = new RegExp(rule.from.pathNot![0]!);
    enforced.set(pkg, shipped.filter((f) => door.test(f)).sort());
  }

  const doc = read('CONTRIBUTING.md');
  const lines = doc.split('\n').map((l) => l.trim());
  const header = lines.findIndex((l) => l.startsWith('| library | its door |'));
  assert.ok(header >= 0, 'the door table of CONTRIBUTING.md');
  const stated = new Map<string, string[]>();
  for (let i = header + 2; i < lines.length && lines[i]!.startsWith('|'); i++) {
    const [, libraries, files] = lines[i]!.split('|');
    const names = [...files!.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
    const folder = names.find((n) => n.endsWith('/')) ?? '';
    const paths = names.filter((n) => !n.endsWith('/')).map((n) => (n.includes('/') ? n : folder + n));
    for (const [, pkg] of libraries!.matchAll(/`([^`]+)`/g)) stated.set(pkg!, paths.sort());
  }
  assert.deepEqual([...stated.keys()].sort(), [...enforced.keys()].sort(), 'libraries with a door');
  for (const [pkg, files] of enforced) assert.deepEqual(stated.get(pkg), files, `the door of ${pkg}`);
});

test("kafkajs' error names are matched only in kafka-common.ts, as CONTRIBUTING.md says", () => {
  // a string or regex literal starting with a kafkajs error name, or an instanceof test against one
  const matching = /(['"`/^]|instanceof\s+(\w+\.)?)KafkaJS\w*/;
  const outside = shippedFiles().filter((file) => {
    if (file === 'runtime/engines/kafka/kafka-common.ts') return false;
    const code = read(file)
      .split('\n')
      .filter((l) => !/^\s*(\/\/|\*|\/\*)/.test(l));
    return code.some((l) => matching.test(l.replace(/\/\/.*$/, '')));
  });
  assert.deepEqual(outside, []);
  assert.match(read('runtime/engines/kafka/kafka-common.ts'), matching, 'kafka-common.ts matches them');
  assert.match(read('CONTRIBUTING.md'), /error names are matched only in\s+`kafka-common.ts`/);
});
