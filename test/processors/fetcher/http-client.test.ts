import assert from 'node:assert/strict';
import { CrawlError } from '../../../core/errors.js';
import type http from 'node:http';
import { Readable, pipeline } from 'node:stream';
import { after, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import zlib from 'node:zlib';
import { decodeBody } from '../../../processors/common/decode.js';
import { loopbackClient, startHttp, startTcp, type LoopbackServer } from './loopback.js';

const MiB = 1024 * 1024;
const servers: LoopbackServer[] = [];
const track = <T extends LoopbackServer>(s: T): T => (servers.push(s), s);
after(async () => {
  await Promise.all(servers.map((s) => s.close()));
});

/** Writes `total` bytes of 'a' from one reused chunk, honouring backpressure; returns bytes written. */
function streamBytes(res: http.ServerResponse, total: number, written: { bytes: number }): void {
  const chunk = Buffer.alloc(64 * 1024, 'a');
  const pump = (): void => {
    while (written.bytes < total && !res.destroyed) {
      const n = Math.min(chunk.length, total - written.bytes);
      written.bytes += n;
      if (!res.write(n === chunk.length ? chunk : chunk.subarray(0, n))) {
        res.once('drain', pump);
        return;
      }
    }
    if (written.bytes >= total) res.end();
  };
  pump();
}

describe('HttpClient', () => {
  test('a 200 returns status, lower-case headers with repeats joined, the body, and the address used', async () => {
    let seen: http.IncomingHttpHeaders = {};
    const server = track(
      await startHttp((req, res) => {
        seen = req.headers;
        res.setHeader('X-Multi', ['a', 'b']);
        res.setHeader('Content-Type', 'text/html; charset=utf-8');
        res.end('<p>hello</p>');
      }),
    );
    const client = loopbackClient();
    const before = Date.now();
    const out = await client.fetch(`http://127.0.0.1:${server.port}/page?q=1#frag`, {
      'If-None-Match': '"v1"',
      Host: 'other.test',
    });
    await client.close();

    assert.equal(out.errorCode, undefined, out.errorMessage);
    assert.equal(out.status, 200);
    assert.equal(out.body.toString(), '<p>hello</p>');
    assert.equal(out.truncated, false);
    assert.equal(out.headers['x-multi'], 'a, b');
    assert.equal(out.headers['content-type'], 'text/html; charset=utf-8');
    assert.equal(out.remoteAddress, '127.0.0.1');
    assert.ok(out.startedAt >= before && out.durationMs >= 0);
    assert.equal(seen['user-agent'], 'crawlstream-test/1.0 (+http://crawler.test/)');
    assert.equal(seen['accept'], 'text/html,application/xhtml+xml,*/*;q=0.8');
    assert.equal(seen['accept-encoding'], 'gzip, deflate, br');
    assert.equal(seen['if-none-match'], '"v1"');
    assert.equal(seen['host'], `127.0.0.1:${server.port}`, 'a caller cannot replace Host');
  });

  test('fetches to one origin share a single keep-alive connection, even when issued together', async () => {
    const server = track(await startHttp((_req, res) => setTimeout(() => res.end('ok'), 20)));
    const client = loopbackClient();
    const url = `http://127.0.0.1:${server.port}/`;
    const outs = await Promise.all([client.fetch(url), client.fetch(url), client.fetch(url)]);
    const last = await client.fetch(url);
    await client.close();
    assert.deepEqual(
      [...outs, last].map((o) => o.status),
      [200, 200, 200, 200],
    );
    assert.equal(server.connections(), 1);
  });

  test('a 64 MB body is cut at the cap, keeps its status, and never sits in memory', async (t) => {
    const written = { bytes: 0 };
    const total = 64 * MiB;
    const server = track(
      await startHttp((_req, res) => {
        res.writeHead(200, { 'content-length': String(total) });
        streamBytes(res, total, written);
      }),
    );
    const client = loopbackClient({ maxBodyBytes: 10 * MiB });
    const baseline = process.memoryUsage();
    const peak = { rss: baseline.rss, arrayBuffers: baseline.arrayBuffers };
    const sample = (): void => {
      const now = process.memoryUsage();
      peak.rss = Math.max(peak.rss, now.rss);
      peak.arrayBuffers = Math.max(peak.arrayBuffers, now.arrayBuffers);
    };
    const sampler = setInterval(sample, 2);
    const out = await client.fetch(`http://127.0.0.1:${server.port}/big`);
    clearInterval(sampler);
    sample();
    await client.close();

    assert.equal(out.status, 200);
    assert.equal(out.truncated, true);
    assert.equal(out.errorCode, 'CS_TOO_LARGE');
    assert.equal(out.body.length, 10 * MiB);
    // holding the whole body would cost at least 64 MiB of buffers (twice that with a concat)
    const buffersMiB = (peak.arrayBuffers - baseline.arrayBuffers) / MiB;
    const rssMiB = (peak.rss - baseline.rss) / MiB;
    t.diagnostic(
      `64 MB body at a 10 MiB cap: peak growth RSS ${rssMiB.toFixed(1)} MiB, buffers ${buffersMiB.toFixed(1)} MiB`,
    );
    assert.ok(buffersMiB < 40, `buffers grew ${buffersMiB.toFixed(1)} MiB`);
    assert.ok(rssMiB < 80, `RSS grew ${rssMiB.toFixed(1)} MiB`);
    await sleep(50);
    assert.ok(written.bytes < total, `server wrote all ${written.bytes} bytes: the stream was not destroyed`);
  });

  test('a 1 GB gzip bomb is cut raw at the cap and decodeBody reports CS_BOMB', async () => {
    const fed = { bytes: 0 };
    const server = track(
      await startHttp((_req, res) => {
        res.writeHead(200, { 'content-type': 'text/html', 'content-encoding': 'gzip' });
        const zeros = Buffer.alloc(64 * 1024);
        const source = Readable.from(
          (function* () {
            while (fed.bytes < 1024 * MiB) {
              fed.bytes += zeros.length;
              yield zeros;
            }
          })(),
        );
        pipeline(source, zlib.createGzip(), res, () => {});
      }),
    );
    const client = loopbackClient({ maxBodyBytes: 256 * 1024 });
    const out = await client.fetch(`http://127.0.0.1:${server.port}/bomb`);
    await client.close();

    assert.equal(out.status, 200);
    assert.equal(out.truncated, true);
    assert.equal(out.body.length, 256 * 1024);
    assert.equal(out.headers['content-encoding'], 'gzip');
    const decoded = decodeBody(out.body, out.headers['content-encoding'], 10 * MiB);
    assert.equal(decoded.errorCode, 'CS_BOMB');
    assert.equal(decoded.body.length, 0);
  });

  test('a slow-loris server trickling a byte a second ends at the total timeout with CS_TIMEOUT', async () => {
    const server = track(
      await startHttp((_req, res) => {
        res.writeHead(200, { 'content-length': '1000' });
        res.write('x');
        const timer = setInterval(() => res.write('x'), 1000);
        res.on('close', () => clearInterval(timer));
      }),
    );
    const client = loopbackClient({ totalTimeoutMs: 1500 });
    const out = await client.fetch(`http://127.0.0.1:${server.port}/slow`);
    await client.close();
    assert.equal(out.errorCode, 'CS_TIMEOUT', out.errorMessage);
    assert.equal(out.status, 200);
    assert.ok(out.body.length >= 1, 'the partial body was not kept');
    // the server never ends the body: only the total timeout ended this fetch (a hang fails by the
    // test's timeout); how late a loaded machine fires the timer is no concern of this test
    assert.match(out.errorMessage ?? '', /no complete response within 1500 ms/);
    assert.ok(out.durationMs >= 1400, `ended after ${out.durationMs} ms, before the total timeout`);
  });

  test('a server that never sends headers ends at the headers timeout with CS_TIMEOUT', async () => {
    const server = track(await startTcp(() => {}));
    const client = loopbackClient({ headersTimeoutMs: 300, totalTimeoutMs: 5000 });
    const out = await client.fetch(`http://127.0.0.1:${server.port}/`);
    await client.close();
    assert.equal(out.errorCode, 'CS_TIMEOUT', out.errorMessage);
    assert.equal(out.status, 0);
    // the headers timeout ended it, not the total one (whose message names the total)
    assert.doesNotMatch(out.errorMessage ?? '', /no complete response/, out.errorMessage ?? '');
    assert.ok(out.durationMs >= 250, `ended after ${out.durationMs} ms, before the headers timeout`);
  });

  test('a connection reset mid-body is CS_RESET with the status and partial body kept', async () => {
    const server = track(
      await startHttp((_req, res) => {
        res.writeHead(200, { 'content-length': '100000' });
        res.write(Buffer.alloc(1000, 'r'), () => setTimeout(() => res.socket?.resetAndDestroy(), 50));
      }),
    );
    const client = loopbackClient();
    const out = await client.fetch(`http://127.0.0.1:${server.port}/reset`);
    await client.close();
    assert.equal(out.errorCode, 'CS_RESET', out.errorMessage);
    assert.equal(out.status, 200);
    assert.equal(out.body.length, 1000);
  });

  test('onSend runs once per request, before the server reads it and never for a request that failed before sending; other traffic to the address does not call it', async () => {
    const events: string[] = [];
    const server = track(
      await startHttp((req, res) => {
        events.push(`server ${req.url}`);
        res.end('ok');
      }),
    );
    const client = loopbackClient();
    const sent = (name: string) => () => void events.push(`sent ${name}`);
    // the first request opens the connection: its send comes after the connect
    const first = client.fetch(`http://127.0.0.1:${server.port}/a`, {}, undefined, sent('/a'));
    // the process's own global fetch to the same address (a health probe, say) is not this client's
    const foreign = await fetch(`http://127.0.0.1:${server.port}/foreign`);
    await foreign.text();
    assert.equal((await first).status, 200);
    assert.equal((await client.fetch(`http://127.0.0.1:${server.port}/b`, {}, undefined, sent('/b'))).status, 200);
    assert.equal((await client.fetch(`http://127.0.0.1:${server.port}/c`)).status, 200, 'no hook: nothing to call');
    await client.close();
    assert.deepEqual(
      events.filter((e) => e !== 'server /foreign'),
      ['sent /a', 'server /a', 'sent /b', 'server /b', 'server /c'],
    );

    const refused = await startTcp(() => {});
    const port = refused.port;
    await refused.close();
    const other = loopbackClient();
    let calls = 0;
    const out = await other.fetch(`http://127.0.0.1:${port}/`, {}, undefined, () => void calls++);
    await other.close();
    assert.equal(out.errorCode, 'CS_CONNECT', out.errorMessage);
    assert.equal(calls, 0, 'a refused connection sent nothing');
  });

  test('a request whose send hook answers an error is not written: it fails with that error, the connection made', async () => {
    const seen: string[] = [];
    const server = track(
      await startHttp((req, res) => {
        seen.push(req.url ?? '');
        res.end('ok');
      }),
    );
    const client = loopbackClient();
    const out = await client.fetch(
      `http://127.0.0.1:${server.port}/refused`,
      {},
      undefined,
      () => new CrawlError('CS_LEASE_EXPIRED', 'the window passed'),
    );
    assert.equal(out.errorCode, 'CS_LEASE_EXPIRED', out.errorMessage);
    assert.equal(out.status, 0);
    // the client goes on: the next request is written
    assert.equal((await client.fetch(`http://127.0.0.1:${server.port}/next`)).status, 200);
    await client.close();
    assert.deepEqual(seen, ['/next'], 'the server never read the refused request');
  });

  test('a refused connection is CS_CONNECT', async () => {
    const server = await startTcp(() => {});
    const port = server.port;
    await server.close();
    const client = loopbackClient();
    const out = await client.fetch(`http://127.0.0.1:${port}/`);
    await client.close();
    assert.equal(out.errorCode, 'CS_CONNECT', out.errorMessage);
    assert.equal(out.status, 0);
  });

  test('a TLS handshake with a non-TLS server is CS_TLS and carries the ASCII host name as SNI', async () => {
    let hello = Buffer.alloc(0);
    const server = track(
      await startTcp((socket) => {
        socket.once('data', (chunk) => {
          hello = chunk;
          socket.end('HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n');
        });
      }),
    );
    const client = loopbackClient({ rules: ['bücher.test=127.0.0.1'] });
    const out = await client.fetch(`https://bücher.test:${server.port}/`);
    await client.close();
    assert.equal(out.errorCode, 'CS_TLS', out.errorMessage);
    assert.equal(hello[0], 0x16, 'the first bytes are a TLS handshake record');
    assert.ok(hello.includes(Buffer.from('xn--bcher-kva.test')), 'ClientHello names the original host');
    assert.ok(!hello.includes(Buffer.from('127.0.0.1')));
  });

  test('a 301 is returned, not followed, with an absolute redirect target', async () => {
    const paths: string[] = [];
    const server = track(
      await startHttp((req, res) => {
        paths.push(req.url ?? '');
        res.writeHead(301, { location: '../next?x=1' }).end();
      }),
    );
    const client = loopbackClient();
    const out = await client.fetch(`http://127.0.0.1:${server.port}/a/b/c`);
    await client.close();
    assert.equal(out.status, 301);
    assert.equal(out.errorCode, undefined);
    assert.equal(out.redirectTarget, `http://127.0.0.1:${server.port}/a/next?x=1`);
    assert.deepEqual(paths, ['/a/b/c']);
  });

  test('Retry-After is parsed from delta-seconds and from an HTTP-date', async () => {
    const server = track(
      await startHttp((req, res) => {
        const value = req.url === '/seconds' ? '120' : new Date(Date.now() + 60_000).toUTCString();
        res.writeHead(req.url === '/seconds' ? 503 : 429, { 'retry-after': value }).end();
      }),
    );
    const client = loopbackClient();
    const seconds = await client.fetch(`http://127.0.0.1:${server.port}/seconds`);
    const date = await client.fetch(`http://127.0.0.1:${server.port}/date`);
    await client.close();
    assert.equal(seconds.status, 503);
    assert.equal(seconds.retryAfterMs, 120_000);
    assert.equal(date.status, 429);
    assert.ok(date.retryAfterMs! > 58_000 && date.retryAfterMs! <= 60_000, `got ${date.retryAfterMs}`);
  });

  test('invalid URLs are CS_BAD_URL outcomes without any network', async () => {
    const client = loopbackClient();
    for (const url of ['http://', 'ftp://x', 'http://[::1', 'javascript:', 'not a url', 'file:///etc/passwd']) {
      const out = await client.fetch(url);
      assert.equal(out.errorCode, 'CS_BAD_URL', url);
      assert.equal(out.status, 0);
      assert.equal(out.url, url);
      assert.ok(out.errorMessage && out.errorMessage.length > 0);
    }
    await client.close();
  });

  test('an IDN host reaches the server as punycode in the Host header', async () => {
    let host: string | undefined;
    const server = track(
      await startHttp((req, res) => {
        host = req.headers.host;
        res.end('ok');
      }),
    );
    const client = loopbackClient({ rules: ['bücher.test=127.0.0.1'] });
    const out = await client.fetch(`http://bücher.test:${server.port}/`);
    await client.close();
    assert.equal(out.status, 200, out.errorMessage);
    assert.equal(host, `xn--bcher-kva.test:${server.port}`);
    assert.equal(out.remoteAddress, '127.0.0.1');
  });

  test('a name resolving to a refused address is CS_REFUSED_ADDRESS and that address gets no connection', async () => {
    const trap = track(await startHttp((_req, res) => res.end('reached'), '127.0.0.9'));
    const refused = loopbackClient({ rules: ['evil.test=127.0.0.9'], allow: ['127.0.0.1/32'] });
    const out = await refused.fetch(`http://evil.test:${trap.port}/`);
    await refused.close();
    assert.equal(out.errorCode, 'CS_REFUSED_ADDRESS', out.errorMessage);
    assert.match(out.errorMessage ?? '', /127\.0\.0\.9 is loopback/);
    assert.equal(out.status, 0);
    await sleep(50);
    assert.equal(trap.connections(), 0);

    // the same listener does count a connection the guard allows
    const allowed = loopbackClient({ rules: ['evil.test=127.0.0.9'], allow: ['127.0.0.9/32'] });
    const control = await allowed.fetch(`http://evil.test:${trap.port}/`);
    await allowed.close();
    assert.equal(control.status, 200, control.errorMessage);
    assert.equal(trap.connections(), 1);
  });

  test('of several addresses, the connection goes to the first one the guard allows', async () => {
    const server = track(await startHttp((_req, res) => res.end('right')));
    const trap = track(await startHttp((_req, res) => res.end('wrong'), '127.0.0.9', server.port));
    const client = loopbackClient({ rules: ['mixed.test=127.0.0.9', 'mixed.test=127.0.0.1'] });
    const out = await client.fetch(`http://mixed.test:${server.port}/`);
    await client.close();
    assert.equal(out.body.toString(), 'right', out.errorMessage);
    assert.equal(out.remoteAddress, '127.0.0.1');
    assert.equal(trap.connections(), 0);
  });

  test('an IPv6 literal URL connects to that address when the allow list names it', async () => {
    let host: string | undefined;
    const server = track(
      await startHttp((req, res) => {
        host = req.headers.host;
        res.end('v6');
      }, '::1'),
    );
    const client = loopbackClient({ allow: ['::1/128'] });
    const out = await client.fetch(`http://[::1]:${server.port}/`);
    await client.close();
    assert.equal(out.status, 200, out.errorMessage);
    assert.equal(out.remoteAddress, '::1');
    assert.equal(host, `[::1]:${server.port}`);
  });

  test('IP-literal URLs are guarded too, in any spelling the URL parser accepts', async () => {
    const trap = track(await startHttp((_req, res) => res.end('reached')));
    const client = loopbackClient({ allow: [] });
    for (const host of ['127.0.0.1', '2130706433', '0x7f.1', '[::ffff:127.0.0.1]']) {
      const out = await client.fetch(`http://${host}:${trap.port}/`);
      assert.equal(out.errorCode, 'CS_REFUSED_ADDRESS', `${host}: ${out.errorMessage}`);
    }
    await client.close();
    assert.equal(trap.connections(), 0);
  });

  test('a name no rule matches, with system DNS off, is CS_DNS', async () => {
    const client = loopbackClient({ rules: ['known.test=127.0.0.1'] });
    const out = await client.fetch('http://unknown.test/');
    await client.close();
    assert.equal(out.errorCode, 'CS_DNS', out.errorMessage);
  });
});
