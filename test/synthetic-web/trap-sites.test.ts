import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, test } from 'node:test';
import { SyntheticWeb } from '../../synthetic-web/synthetic-web.js';
import { trapWeb } from '../../synthetic-web/trap-sites.js';

let web: SyntheticWeb;
before(async () => {
  web = await SyntheticWeb.start({ sites: trapWeb(5, 4).sites });
});
after(() => web.close());

/** The status and the hrefs of a page, asked of the server with `Host: host`. */
function links(host: string, path: string): Promise<{ status: number; hrefs: string[] }> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port: web.port, path, agent: false, headers: { host: `${host}:${web.port}` } },
      (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            hrefs: [...body.matchAll(/href="([^"]*)"/g)].map((m) => m[1]!.replaceAll('&amp;', '&')),
          }),
        );
      },
    );
    req.on('error', reject);
    req.end();
  });
}

test('each trap is reached by exactly one link, from a normal site’s home page', () => {
  const { sites, trapHosts } = trapWeb(5, 4);
  for (const trap of trapHosts) {
    const from = sites.flatMap((s) =>
      Object.values(s.pages).flatMap((p) =>
        (Array.isArray(p.links) ? p.links : []).filter((l) => l.includes(`//${trap}:`)),
      ),
    );
    assert.equal(from.length, 1, trap);
  }
});

test('the calendar links the months around a month and each of its days, endlessly', async () => {
  const { hrefs } = await links('events.test', '/cal/2031/12/');
  assert.ok(hrefs.includes('/cal/2032/01/') && hrefs.includes('/cal/2031/11/'));
  assert.equal(hrefs.filter((h) => /^\/cal\/2031\/12\/\d\d\/$/.test(h)).length, 31);
  assert.ok((await links('events.test', '/cal/2950/02/28/')).hrefs.includes('/cal/2950/03/01/'));
});

test('the portal puts a new session id in the path of every link, on every request', async () => {
  const a = (await links('portal.test', '/s/0a1b2c3d4e5f6071/news')).hrefs;
  const b = (await links('portal.test', '/s/0a1b2c3d4e5f6071/news')).hrefs;
  assert.ok(a.every((h) => /^\/s\/[0-9a-f]{16}\//.test(h)));
  assert.equal(new Set([...a, ...b]).size, a.length + b.length);
});

test('the archive always has a deeper directory with a new name, never a repeated segment', async () => {
  let path = '/';
  for (let depth = 0; depth < 20; depth++) {
    const { status, hrefs } = await links('archive.test', path);
    assert.equal(status, 200, path);
    path = depth === 0 ? hrefs[0]! : `${path}${hrefs[0]!}`;
  }
  const segments = path.split('/').filter(Boolean);
  assert.equal(segments.length, 20);
  assert.ok(segments.every((s) => /^[a-z]+$/.test(s)));
  assert.ok(new Set(segments).size >= 18, `names repeat: ${path}`);
});

test('the listing links its next page and each facet not yet applied', async () => {
  const { hrefs } = await links('catalog.test', '/items?page=2&brand=7');
  assert.ok(hrefs.includes('/items?page=3&brand=7'));
  assert.ok(hrefs.some((h) => h.includes('colour=')) && hrefs.some((h) => h.includes('price=')));
  assert.ok(!hrefs.some((h) => (h.match(/brand=/g) ?? []).length > 1));
});

test('every subdomain of the hosting site answers and links two new subdomains; other hosts do not', async () => {
  const { status, hrefs } = await links('kalomi.hosting.test', '/');
  assert.equal(status, 200);
  const hosts = hrefs.map((h) => new URL(h).hostname);
  assert.equal(hosts.length, 2);
  assert.ok(hosts.every((h) => h.endsWith('.hosting.test') && h !== 'kalomi.hosting.test'));
  assert.equal((await links('kalomi.elsewhere.test', '/')).status, 404);
});
