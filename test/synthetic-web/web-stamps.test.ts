import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { connect } from 'node:net';
import type { Duplex } from 'node:stream';
import { connect as tlsConnect } from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { Worker } from 'node:worker_threads';
import { SyntheticWeb } from '../../synthetic-web/synthetic-web.js';
import { makeTestCertificates, type TestCertificates } from '../../synthetic-web/tls.js';
import type { SiteSpec } from '../../synthetic-web/sites.js';
import { get } from './web-client.js';

/**
 * The web's stamps, which the judge reads: a request's start may be late by its startSlack, never
 * more, however the web's loop stalls; a reply's end is when its bytes went out, not when a busy
 * web got round to noticing.
 */
/**
 * Runs `body` against a web of one site `host`, over http and https (its certificates signed by
 * `certs.caPem`), every reply made by `respond`; the web is closed and its certificates removed
 * after, whatever `body` does.
 */
async function withOneSite(
  host: string,
  respond: NonNullable<SiteSpec['respond']>,
  body: (web: SyntheticWeb, certs: TestCertificates) => Promise<void>,
): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'crawlstream-web-stamps-'));
  const certs = makeTestCertificates(dir, [host]);
  const web = await SyntheticWeb.start({ sites: [{ host, pages: {}, respond }], tls: certs });
  try {
    await body(web, certs);
  } finally {
    await web.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

describe("the web's stamps", () => {
  test("a request that waited for the web's stalled loop is stamped late, and its startSlack covers the wait", async () => {
    const web = await SyntheticWeb.start({
      sites: [{ host: 'stalled.test', pages: { '/': { title: 't', links: [] } } }],
    });
    try {
      // the loop turns a few times first, as it does in every crawl
      await new Promise((resolve) => setTimeout(resolve, 20));
      const socket = connect(web.port, '127.0.0.1');
      await new Promise((resolve) => socket.once('connect', resolve));
      const answered = new Promise((resolve) => socket.once('data', resolve));
      socket.write('GET / HTTP/1.1\r\nHost: stalled.test\r\nConnection: close\r\n\r\n');
      // the request is on the server's socket now; this process (the web's too) stalls 80 ms
      const sentAt = performance.timeOrigin + performance.now();
      const until = performance.now() + 80;
      while (performance.now() < until);
      await answered;
      socket.destroy();
      const [entry] = web.requests();
      assert.ok(entry!.start - sentAt >= 80, `stamped ${entry!.start - sentAt} ms after the send`);
      // the turn before the stamp came right after the stall: only the one before that tells
      assert.ok(
        entry!.startSlack! >= entry!.start - sentAt,
        `startSlack ${entry!.startSlack} ms, but the stamp was ${(entry!.start - sentAt).toFixed(1)} ms late`,
      );
    } finally {
      await web.close();
    }
  });

  test("a request written with its connection's connect while the web stalls: startSlack covers the turn its accept took", async () => {
    // the judge's ip-gap verdicts on the Kafka real-pages bench (pairs 13–65 ms apart, each first a
    // robots.txt on a new http connection, stamped after a stall with startSlack ~20 ms) came from
    // such requests: accepted in one turn, read only in the next, so late by a turn more than the
    // stamp's own turns tell
    const web = await SyntheticWeb.start({
      sites: [{ host: 'fresh.test', pages: { '/': { title: 't', links: [] } } }],
    });
    // the client has a loop of its own, as a crawler does: it connects and writes mid-stall, and
    // says so in shared memory, which the stalled loop here can read
    const written = new Int32Array(new SharedArrayBuffer(4));
    const client = new Worker(
      `const { parentPort, workerData } = require('node:worker_threads');
       const { connect } = require('node:net');
       parentPort.once('message', () => {
         const socket = connect(workerData.port, '127.0.0.1', () => {
           socket.write('GET / HTTP/1.1\\r\\nHost: fresh.test\\r\\nConnection: close\\r\\n\\r\\n');
           parentPort.postMessage(performance.timeOrigin + performance.now());
           Atomics.store(workerData.written, 0, 1);
         });
         socket.on('data', () => undefined);
         socket.on('close', () => parentPort.close());
       });`,
      { eval: true, workerData: { port: web.port, written } },
    );
    try {
      const sent = new Promise<number>((resolve) => client.once('message', resolve));
      await new Promise((resolve) => setTimeout(resolve, 20));
      client.postMessage('go');
      // stall until the request is written (however long the client takes on a loaded machine), then 60 ms more
      const giveUp = performance.now() + 10_000;
      while (Atomics.load(written, 0) === 0 && performance.now() < giveUp);
      const until = performance.now() + 60;
      while (performance.now() < until);
      assert.equal(Atomics.load(written, 0), 1, 'the client did not write within 10 s');
      const sentAt = await sent;
      while (web.requests().length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
      const [entry] = web.requests();
      assert.ok(entry!.start - sentAt >= 50, `stamped only ${(entry!.start - sentAt).toFixed(1)} ms after the send`);
      assert.ok(
        entry!.startSlack! >= entry!.start - sentAt,
        `startSlack ${entry!.startSlack} ms, but the stamp was ${(entry!.start - sentAt).toFixed(1)} ms late`,
      );
    } finally {
      await client.terminate();
      await web.close();
    }
  });

  test("a response's end is when its bytes went to the socket, not when the busy server got round to noticing, over http and https, short and 24 KiB", async () => {
    // on a loaded machine the client, woken by the write, can run for tens of ms before the server's
    // 'finish' callback does; logged then, a polite 1 s gap looked 1.2 ms short (a judge
    // violation in one of ten npm test runs under load). Here 80 ms of work queued before the
    // write delays that callback the same way. Over https the write goes through TLS first; a
    // 24 KiB reply spans two TLS records, which the TLS socket reports done only after the busy
    // spell, though the client has them (a real-pages Kafka run judged a polite gap 8.4 ms short so).
    const busy = (ms: number): void => {
      const until = performance.now() + ms;
      while (performance.now() < until);
    };
    const respond: NonNullable<SiteSpec['respond']> = (req) => {
      process.nextTick(() => busy(80));
      const body = req.path === '/big' ? 'x'.repeat(24 * 1024) : 'ok';
      return { status: 200, headers: { 'content-type': 'text/plain' }, body };
    };
    await withOneSite('quick.test', respond, async (web, certs) => {
      const overHttps = (path: string) =>
        new Promise<number>((resolve, reject) => {
          const req = httpsRequest(
            {
              host: '127.0.0.1',
              port: web.httpsPort,
              path,
              servername: 'quick.test',
              headers: { host: 'quick.test' },
              ca: certs.caPem,
              agent: false,
            },
            (res) => {
              res.resume();
              res.on('end', () => resolve(res.statusCode!));
            },
          );
          req.on('error', reject);
          req.end();
        });
      for (const path of ['/', '/big']) {
        assert.equal((await get(web, 'quick.test', path)).status, 200);
        assert.equal(await overHttps(path), 200);
      }
      const entries = web.requests();
      assert.deepEqual(
        entries.map((e) => `${e.scheme} ${e.path} ${e.bytes}`),
        ['http / 2', 'https / 2', 'http /big 24576', 'https /big 24576'],
      );
      for (const entry of entries)
        assert.ok(
          entry.end - entry.start < 40,
          `${entry.scheme} ${entry.path}: logged ${(entry.end - entry.start).toFixed(1)} ms for an immediate reply`,
        );
    });
  });

  test('a reply the kernel cannot take whole (a client not reading) ends when it finished sending, over http and https', async () => {
    // the other side of the rule above: 32 MiB is more than loopback's socket buffers hold, so the
    // write leaves most of it queued, and the reply is complete only once the client has read it
    const huge = 'y'.repeat(32 * 2 ** 20);
    const READ_AFTER_MS = 300;
    /** Asks for the reply, reads nothing of it for READ_AFTER_MS, then reads it to its end. */
    const readLate = (socket: Duplex) =>
      new Promise<void>((resolve, reject) => {
        socket.on('error', reject);
        socket.on('end', () => resolve());
        socket.pause();
        socket.write('GET / HTTP/1.1\r\nHost: reader.test\r\nConnection: close\r\n\r\n');
        setTimeout(() => socket.on('data', () => {}).resume(), READ_AFTER_MS);
      });
    const respond = () => ({ status: 200, headers: { 'content-type': 'text/plain' }, body: huge });
    await withOneSite('reader.test', respond, async (web, certs) => {
      await readLate(connect(web.port, '127.0.0.1'));
      await readLate(
        tlsConnect({ host: '127.0.0.1', port: web.httpsPort, servername: 'reader.test', ca: certs.caPem }),
      );
      const entries = web.requests();
      assert.deepEqual(
        entries.map((e) => `${e.scheme} ${e.status} ${e.bytes}`),
        [`http 200 ${huge.length}`, `https 200 ${huge.length}`],
      );
      for (const entry of entries)
        assert.ok(
          entry.end - entry.start >= READ_AFTER_MS - 50,
          `${entry.scheme}: logged ${(entry.end - entry.start).toFixed(1)} ms for a reply read ${READ_AFTER_MS} ms late`,
        );
    });
  });
});
