import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import type { PageContent } from '../../schemas/types.js';
import { SyntheticWeb } from '../../synthetic-web/synthetic-web.js';
import { CLI, crawlArgs, exportPageRecords, removeDir, sh, tempDir, writeSeeds } from './harness.js';

test('an embedded crawl exports page-content: one record per HTML page record, with title, main text and anchors', async () => {
  const web = await SyntheticWeb.start({
    sites: [
      {
        host: 'content.test',
        seed: true,
        pages: {
          '/': {
            title: 'Content home',
            links: ['a.html'],
            html: '<nav><a href="/b.html">Menu B</a></nav><footer>Footer text</footer>',
          },
          '/a.html': { title: 'Content A', links: ['/'] },
          '/b.html': { title: 'Content B', links: ['/'] },
        },
      },
    ],
  });
  const dir = tempDir('export-content');
  try {
    const data = join(dir, 'data');
    const crawled = await sh(process.execPath, [CLI, ...crawlArgs(writeSeeds(dir, web.seedUrls()), data, ['--quiet'])]);
    assert.equal(crawled.code, 0, crawled.stderr);
    const out = spawnSync(process.execPath, [CLI, 'export', 'page-content', '--data', data], { encoding: 'utf8' });
    assert.equal(out.status, 0, out.stderr);
    const contents = out.stdout
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => JSON.parse(l) as PageContent);
    const at = (path: string) => `http://content.test:${web.port}${path}`;
    assert.deepEqual(contents.map((c) => c.url).sort(), [at('/'), at('/a.html'), at('/b.html')]);
    assert.equal(
      exportPageRecords(data).filter((r) => r.contentType?.startsWith('text/html')).length,
      contents.length,
      'one page-content record per HTML page record',
    );
    const home = contents.find((c) => c.url === at('/'))!;
    assert.equal(home.title, 'Content home');
    // nav and footer are page furniture: not in the main text; their links are still outlinks
    assert.ok(home.text.startsWith('Content home') && home.text.endsWith('a.html'), home.text);
    assert.ok(!home.text.includes('Menu B') && !home.text.includes('Footer text'), home.text);
    assert.deepEqual(
      home.outlinks.map((l) => [l.url, l.anchor, l.followed]),
      [
        [at('/a.html'), 'a.html', true],
        [at('/b.html'), 'Menu B', true],
      ],
    );
  } finally {
    await web.close();
    removeDir(dir);
  }
});
