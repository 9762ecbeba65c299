import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { normalizeUrl } from '../../processors/common/normalize.js';
import { renderPage, type PageSpec, type SiteSpec } from '../../synthetic-web/sites.js';
import { standardWeb } from '../../synthetic-web/standard-web.js';
import { SyntheticWeb } from '../../synthetic-web/synthetic-web.js';
import { CLI, removeDir, sleep, startCli, tempDir, writeSeeds } from '../e2e/harness.js';
import { python } from '../python/python.js';
import { kafkaInfra } from './infra.js';
import { injectArgs, LOOPBACK_WEB_ARGS, pageRecordsOf, runArgs } from './page-records.js';

const READER = fileURLToPath(new URL('../../../test/python/read_page_content.py', import.meta.url));
const run = promisify(execFile);

/** What the independent reader prints of one page-content record. */
interface ReadContent {
  url: string;
  site: string;
  fetchTime: number;
  visit: number;
  status: number;
  title: string | null;
  text: string;
  textTruncated: boolean;
  outlinks: { url: string; anchor: string | null; rel: string | null; kind: string; followed: boolean }[];
  outlinksTruncated: boolean;
  headers: [string, string][];
}

async function pageContentOf(brokers: string, registry: string, topic: string): Promise<ReadContent[]> {
  const { stdout } = await run(python(), [READER, brokers, registry, topic], {
    encoding: 'utf8',
    timeout: 120_000,
    maxBuffer: 64 * 2 ** 20,
  });
  return stdout
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as ReadContent);
}

const collapse = (s: string) =>
  s
    .replace(/<[^>]*>/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();

/**
 * What a reader of the served HTML finds, read with regular expressions rather than the crawler's
 * parser: the title, the longest paragraph, and each `<a href>`'s normalized URL with the first
 * non-empty anchor text, and whether any link to it said rel=nofollow.
 */
function served(html: string, url: string) {
  const title = /<title>([^<]*)<\/title>/.exec(html)![1]!;
  const paragraphs = [...html.matchAll(/<p[^>]*>([\s\S]*?)<\/p>/g)].map((m) => collapse(m[1]!));
  const longest = paragraphs.sort((a, b) => b.length - a.length)[0] ?? '';
  const baseHref = /<base href="([^"]*)"/.exec(html)?.[1];
  const base = baseHref !== undefined ? new URL(baseHref, url).href : url;
  const links = new Map<string, { anchor: string | null; nofollow: boolean }>();
  for (const m of html.matchAll(/<a ([^>]*)>([\s\S]*?)<\/a>/g)) {
    const href = /href="([^"]*)"/.exec(m[1]!)?.[1]?.trim();
    if (href === undefined || href === '' || href.startsWith('#') || /^(javascript|mailto):/i.test(href)) continue;
    const n = normalizeUrl(href, base);
    if (!n.ok) continue;
    const anchor = collapse(m[2]!) || null;
    const nofollow = /rel="[^"]*nofollow/.test(m[1]!);
    const seen = links.get(n.url);
    if (seen === undefined) links.set(n.url, { anchor, nofollow });
    else links.set(n.url, { anchor: seen.anchor ?? anchor, nofollow: seen.nofollow && nofollow });
  }
  return { title, longest, links };
}

/** The page a site serves at `pathname`, when it is HTML rendered the same on every request. */
function htmlSpec(site: SiteSpec | undefined, pathname: string): PageSpec | undefined {
  const spec = site?.pages[pathname];
  if (spec === undefined || (spec.status ?? 200) !== 200) return undefined;
  if (spec.contentType !== undefined && !spec.contentType.startsWith('text/html')) return undefined;
  return spec;
}

test(
  'a Python reader of page-content (read_committed, registry) gets the title, text and every outlink with its anchor of every HTML page the synthetic web served to a crawl on Kafka',
  { timeout: 420_000 },
  async () => {
    const { brokers, registry } = kafkaInfra();
    // the standard web but for its trap site, whose links change with every request
    const sites = standardWeb().filter((s) => s.host !== 'trap.test');
    const web = await SyntheticWeb.start({ sites });
    const dir = tempDir('kafka-page-content');
    const appId = `content-${Date.now().toString(36)}`;
    let stderr = '';
    try {
      await run(process.execPath, [CLI, 'topics', 'create', '--brokers', brokers, '--app-id', appId]);
      await run(process.execPath, [CLI, ...injectArgs(writeSeeds(dir, web.seedUrls()), brokers, registry, appId)]);
      const instance = startCli(
        runArgs('all', dir, brokers, registry, [...LOOPBACK_WEB_ARGS, '--quiet', '--fetch-timeout', '3000'], appId),
      );
      instance.child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
      try {
        // until the page records stop growing for 20 s (the web's pages are all fetched by then)
        let count = -1;
        let stableSince = Date.now();
        const until = Date.now() + 240_000;
        while (Date.now() < until && instance.child.exitCode === null) {
          await sleep(2_000);
          const now = (await pageRecordsOf(brokers, registry, `${appId}.page-records`)).length;
          if (now !== count) [count, stableSince] = [now, Date.now()];
          else if (count > 0 && Date.now() - stableSince > 20_000) break;
        }
        instance.child.kill('SIGTERM');
        assert.equal((await instance.exited).code, 0, stderr.slice(-4000));
      } finally {
        instance.child.kill('SIGKILL');
      }

      const records = await pageRecordsOf(brokers, registry, `${appId}.page-records`);
      const contents = await pageContentOf(brokers, registry, `${appId}.page-content`);
      const byHost = new Map(sites.map((s) => [s.host, s]));
      // every HTML page the web answered 200, by the URL the crawler records
      const htmlServed = new Map<string, string>();
      for (const e of web.requests()) {
        const pathname = e.path.split('?')[0]!;
        const spec = e.status === 200 ? htmlSpec(byHost.get(e.host), pathname) : undefined;
        if (spec === undefined) continue;
        const url = `http://${e.host}:${web.port}${e.path}`;
        const html = renderPage(spec, { port: web.port, host: e.host, path: e.path, pageHits: 1 });
        htmlServed.set(normalizeUrl(url).ok ? (normalizeUrl(url) as { url: string }).url : url, html.toString());
      }
      assert.ok(htmlServed.size >= 25, `only ${htmlServed.size} HTML pages served:\n${stderr.slice(-4000)}`);

      const recordedHtml = records.filter((r) => htmlServed.has(r.url));
      assert.deepEqual(
        [...new Set(recordedHtml.map((r) => r.url))].sort(),
        [...htmlServed.keys()].sort(),
        'an HTML page served has no page record',
      );
      // one page-content record per page record of an HTML page, and none for anything else
      assert.deepEqual(
        contents.map((c) => `${c.url} ${c.fetchTime} ${c.visit}`).sort(),
        recordedHtml.map((r) => `${r.url} ${r.fetchTime} ${r.visit ?? 0}`).sort(),
      );

      for (const c of contents) {
        const expected = served(htmlServed.get(c.url)!, c.url);
        assert.equal(c.title, expected.title, c.url);
        assert.ok(
          c.text.startsWith(expected.title),
          `${c.url}: text does not start with its h1: ${c.text.slice(0, 80)}`,
        );
        assert.ok(c.text.includes(expected.longest), `${c.url}: text lacks the page's paragraph`);
        assert.equal(c.textTruncated, false);
        assert.equal(c.outlinksTruncated, false);
        const anchors = c.outlinks.filter((l) => l.kind === 'a');
        assert.deepEqual(
          anchors.map((l) => l.url).sort(),
          [...expected.links.keys()].sort(),
          `${c.url}: outlinks differ from the page's links`,
        );
        for (const l of anchors) {
          const want = expected.links.get(l.url)!;
          assert.equal(l.anchor, want.anchor, `${c.url} → ${l.url}: anchor`);
          if (want.nofollow) {
            assert.equal(l.rel, 'nofollow', `${c.url} → ${l.url}: rel`);
            assert.equal(l.followed, false, `${c.url} → ${l.url}: a nofollow link was followed`);
          }
        }
        assert.ok(
          c.headers.some(([name, value]) => name.toLowerCase() === 'content-type' && value.startsWith('text/html')),
          `${c.url}: no Content-Type among the headers`,
        );
      }
      // the web's one nofollow link and a page's anchor text, read through Kafka
      const blog = contents.find(
        (c) => new URL(c.url).hostname === 'blog.alpha.test' && new URL(c.url).pathname === '/',
      );
      assert.ok(blog?.outlinks.some((l) => l.anchor === 'sponsored' && l.rel === 'nofollow' && !l.followed));
    } finally {
      await web.close();
      removeDir(dir);
    }
  },
);
