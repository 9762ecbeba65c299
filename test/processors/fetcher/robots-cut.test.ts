import assert from 'node:assert/strict';
import { gzipSync } from 'node:zlib';
import { after, test } from 'node:test';
import { RobotsCache } from '../../../processors/frontier/politeness.js';
import { startHttp, type LoopbackServer } from './loopback.js';
import { lease, loopbackConfig, runLeases } from './pipeline.js';

const KIB = 1024;
const CUT = 500 * KIB;

const servers: LoopbackServer[] = [];
after(async () => {
  await Promise.all(servers.map((s) => s.close()));
});

/** A robots.txt of about 600 KiB: a rule at its start, comments, and a rule past 500 KiB. */
function bigRobots(): string {
  const head = 'User-agent: *\nDisallow: /early\n';
  const tail = 'Disallow: /late\n';
  const line = `# ${'-'.repeat(97)}\n`;
  return head + line.repeat(Math.ceil((600 * KIB - head.length) / line.length)) + tail;
}

for (const gzip of [false, true]) {
  test(`a robots.txt is kept up to its first 500 KiB (RFC 9309 2.5), rules past it ignored${gzip ? ', cut after decoding' : ''}`, async () => {
    const body = bigRobots();
    assert.ok(body.length > 590 * KIB);
    const server = await startHttp((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain', ...(gzip ? { 'content-encoding': 'gzip' } : {}) });
      res.end(gzip ? gzipSync(body) : body);
    });
    servers.push(server);
    const origin = `http://big-robots.test:${server.port}`;
    const run = await runLeases(loopbackConfig(), [lease(`${origin}/robots.txt`, { kind: 'ROBOTS' })]);
    const kept = run.results[0]!.robotsBody!;
    assert.equal(run.results[0]!.status, 200);
    assert.equal(Buffer.byteLength(kept), CUT, 'not cut at exactly 500 KiB');
    assert.equal(kept, body.slice(0, CUT));
    const robots = new RobotsCache('crawlstream/0.1');
    assert.equal(robots.isAllowed(origin, kept, `${origin}/early`), false, 'a rule within the first 500 KiB was lost');
    assert.equal(robots.isAllowed(origin, kept, `${origin}/late`), true, 'a rule past 500 KiB was applied');
  });
}

test('a robots.txt of exactly 500 KiB is kept whole', async () => {
  const body = 'User-agent: *\nDisallow: /x\n'.padEnd(CUT - 1, '#') + '\n';
  const server = await startHttp((_req, res) => res.end(body));
  servers.push(server);
  const run = await runLeases(loopbackConfig(), [
    lease(`http://exact-robots.test:${server.port}/robots.txt`, { kind: 'ROBOTS' }),
  ]);
  assert.equal(run.results[0]!.robotsBody, body);
});
