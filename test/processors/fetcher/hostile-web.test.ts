import assert from 'node:assert/strict';
import type http from 'node:http';
import { after, test } from 'node:test';
import { gzipSync } from 'node:zlib';
import { startHttp, startTcp, type LoopbackServer } from './loopback.js';
import { byType, failedFetchRecords, lease, loopbackConfig, runLeases } from './pipeline.js';

const MiB = 1024 * 1024;
const servers: LoopbackServer[] = [];
const track = <T extends LoopbackServer>(s: T): T => (servers.push(s), s);
after(async () => {
  await Promise.all(servers.map((s) => s.close()));
});

/** Writes `total` bytes of 'a', honouring backpressure, until done or the client goes away. */
function streamBytes(res: http.ServerResponse, total: number): void {
  const chunk = Buffer.alloc(64 * 1024, 'a');
  let written = 0;
  const pump = (): void => {
    while (written < total && !res.destroyed) {
      const n = Math.min(chunk.length, total - written);
      written += n;
      if (!res.write(n === chunk.length ? chunk : chunk.subarray(0, n))) return void res.once('drain', pump);
    }
    if (written >= total) res.end();
  };
  pump();
}

/** `gib` GiB of zeros as 1 MiB gzip members, concatenated (a valid multi-member gzip stream): ~1 MB per GiB. */
function gzipBomb(gib: number): Buffer {
  const member = gzipSync(Buffer.alloc(MiB), { level: 9 });
  return Buffer.concat(Array.from({ length: 1024 * gib }, () => member));
}

test(
  'every hostile case ends in one fetch result with its code and one WARC record; RSS stays under 300 MB above baseline',
  { timeout: 60_000 },
  async (t) => {
    const baseline = process.memoryUsage().rss;
    const bomb = gzipBomb(1);
    assert.ok(bomb.length < 2 * MiB, `bomb is ${bomb.length} bytes on the wire`);
    const hugeBomb = gzipBomb(12);
    assert.ok(hugeBomb.length > 10 * MiB, 'the 12 GiB bomb is larger than the body cap on the wire');

    const big = track(
      await startHttp((_req, res) => {
        res.writeHead(200, { 'content-type': 'text/html' });
        streamBytes(res, 64 * MiB);
      }),
    );
    const bombServer = track(
      await startHttp((_req, res) => {
        res.writeHead(200, {
          'content-type': 'text/html',
          'content-encoding': 'gzip',
          'content-length': String(bomb.length),
        });
        res.end(bomb);
      }),
    );
    // one small write every 100 ms, for ever: each arrives well within any per-read timeout
    const hugeBombServer = track(
      await startHttp((_req, res) => {
        res.writeHead(200, {
          'content-type': 'text/html',
          'content-encoding': 'gzip',
          'content-length': String(hugeBomb.length),
        });
        res.end(hugeBomb);
      }),
    );
    const trickle = (socket: { destroyed: boolean; write(s: string): unknown }, text: string): void => {
      const timer = setInterval(() => (socket.destroyed ? clearInterval(timer) : socket.write(text)), 100);
    };
    const slowBody = track(
      await startHttp((_req, res) => {
        res.writeHead(200, { 'content-type': 'text/html' });
        res.write('<');
        trickle(res, 'a');
      }),
    );
    const slowHeaders = track(
      await startTcp((socket) => {
        socket.on('error', () => undefined);
        socket.once('data', () => {
          socket.write('HTTP/1.1 200 OK\r\n');
          trickle(socket, 'x-slow: 1\r\n');
        });
      }),
    );
    const resetEarly = track(
      await startTcp((socket) => {
        socket.on('error', () => undefined);
        socket.once('data', () => socket.resetAndDestroy());
      }),
    );
    const resetMid = track(
      await startTcp((socket) => {
        socket.on('error', () => undefined);
        socket.once('data', () => {
          socket.write(
            `HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: 100000\r\n\r\n${'<p>'.repeat(300)}`,
          );
          setTimeout(() => socket.resetAndDestroy(), 50);
        });
      }),
    );
    const refused = track(await startHttp((_req, res) => res.end('must never be reached'), '127.0.0.9'));
    const hosts: string[] = [];
    const ok = track(
      await startHttp((req, res) => {
        hosts.push(req.headers.host ?? '');
        if (req.url === '/moved') {
          res.writeHead(302, { location: '/target' });
          return void res.end();
        }
        if (req.url === '/to-refused') {
          res.writeHead(301, { location: `http://refused.test:${refused.port}/` });
          return void res.end();
        }
        res.writeHead(200, { 'content-type': 'text/html' });
        res.end('<a href="/next">next</a>');
      }),
    );

    const at = (host: string, server: LoopbackServer, path = '/'): string => `http://${host}:${server.port}${path}`;
    const cases: { name: string; url: string; status: number; code: string | null }[] = [
      { name: '64 MB body', url: at('big.test', big), status: 200, code: 'CS_TOO_LARGE' },
      { name: '1 GB gzip bomb', url: at('bomb.test', bombServer), status: 200, code: 'CS_BOMB' },
      {
        name: '12 GB gzip bomb cut at the body cap',
        url: at('hugebomb.test', hugeBombServer),
        status: 200,
        code: 'CS_BOMB',
      },
      { name: 'slow-loris body', url: at('slowbody.test', slowBody), status: 200, code: 'CS_TIMEOUT' },
      { name: 'slow-loris headers', url: at('slowheaders.test', slowHeaders), status: 0, code: 'CS_TIMEOUT' },
      { name: 'reset before the response', url: at('reset.test', resetEarly), status: 0, code: 'CS_RESET' },
      { name: 'reset in the body', url: at('resetmid.test', resetMid), status: 200, code: 'CS_RESET' },
      { name: 'refused address', url: at('refused.test', refused), status: 0, code: 'CS_REFUSED_ADDRESS' },
      { name: 'redirect', url: at('ok.test', ok, '/moved'), status: 302, code: null },
      { name: 'redirect to a refused address', url: at('ok.test', ok, '/to-refused'), status: 301, code: null },
      { name: 'IDN', url: `http://bücher.test:${ok.port}/`, status: 200, code: null },
      { name: 'invalid IDN', url: `http://xn--a.test:${ok.port}/`, status: 0, code: 'CS_BAD_URL' },
      { name: 'space in host', url: 'http://exa mple.test/', status: 0, code: 'CS_BAD_URL' },
      { name: 'unclosed IPv6 literal', url: 'http://[::1', status: 0, code: 'CS_BAD_URL' },
      { name: 'not http', url: 'ftp://files.test/x', status: 0, code: 'CS_BAD_URL' },
    ];
    const config = loopbackConfig({
      resolve: ['*.test=127.0.0.1', 'refused.test=127.0.0.9'],
      fetchTimeoutMs: 3_000,
      headersTimeoutMs: 2_000,
      connectTimeoutMs: 2_000,
    });
    const leases = cases.map((c) => lease(c.url));
    let peak = baseline;
    const run = await runLeases(config, leases, { during: () => (peak = Math.max(peak, process.memoryUsage().rss)) });
    peak = Math.max(peak, process.memoryUsage().rss);

    assert.equal(run.deadLetters, 0, 'a lease was dead-lettered');
    assert.equal(run.results.length, leases.length, 'one fetch result per lease');
    const byLease = new Map(run.results.map((r) => [r.leaseId, r]));
    for (const [i, c] of cases.entries()) {
      const r = byLease.get(leases[i]!.leaseId);
      assert.ok(r, `${c.name}: no fetch result`);
      assert.deepEqual(
        { status: r.status, code: r.errorCode },
        { status: c.status, code: c.code },
        `${c.name}: ${r.errorMessage}`,
      );
    }
    assert.equal(refused.connections(), 0, 'the refused address was connected to');
    assert.deepEqual(
      hosts.filter((h) => h.startsWith('xn--')),
      [`xn--bcher-kva.test:${ok.port}`],
      'the IDN went out as its A-label',
    );
    const moved = run.results.find((r) => r.url.endsWith('/moved'))!;
    assert.equal(moved.redirectTarget, at('ok.test', ok, '/target'));
    const redirectLinks = run.links
      .flatMap((b) => b.links)
      .filter((l) => l.redirectHops === 1)
      .map((l) => l.url)
      .sort();
    assert.deepEqual(
      redirectLinks,
      [at('ok.test', ok, '/target'), at('refused.test', refused)].sort(),
      'each redirect became one link, one hop further',
    );
    assert.equal(run.pageRecords.find((p) => p.url === at('bomb.test', bombServer))?.errorCode, 'CS_BOMB');

    // one WARC record per lease: a response when a status came back, a metadata record otherwise
    const responses = byType(run.warc, 'response')
      .map((r) => r['warc-target-uri'])
      .sort();
    const metadata = failedFetchRecords(run.warc)
      .map((r) => r['warc-target-uri'])
      .sort();
    assert.deepEqual(
      responses,
      cases
        .filter((c) => c.status > 0)
        .map((c) => c.url)
        .sort(),
    );
    assert.equal(byType(run.warc, 'request').length, responses.length);
    assert.equal(metadata.length, cases.filter((c) => c.status === 0).length);

    const growthMb = (peak - baseline) / MiB;
    t.diagnostic(`peak RSS ${(peak / MiB).toFixed(0)} MB, ${growthMb.toFixed(0)} MB above baseline`);
    assert.ok(growthMb < 300, `RSS grew ${growthMb.toFixed(0)} MB above baseline`);
  },
);
