import { M } from '../core/metric-catalogue.js';
import { fork, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { validateCrawlConfig } from '../processors/common/crawl-config.js';
import { AddressGuard, parseCidr } from '../processors/fetcher/address-guard.js';
import { CachingDnsResolver, parseResolveRule } from '../processors/fetcher/dns-resolver.js';
import { HttpClient } from '../processors/fetcher/http-client.js';
import { TopologyTestDriver } from '../runtime/testing/topology-test-driver.js';
import type { FetchRequest } from '../schemas/types.js';
import { crawlTopology, TOPICS } from '../topology/crawl-topology.js';
import { prose } from '../synthetic-web/sites.js';
import { figure, machineLine } from './machine.js';

// Fetcher throughput against a loopback web of HOSTS virtual hosts served by a child process (so
// the server's CPU is not counted): (1) the HTTP client alone, IN_FLIGHT fetches at once; (2) the
// crawl topology's fetcher task on the topology test driver (leases in through the engines' record
// loop, IN_FLIGHT at once; results and fetched records serialized out, neither kept nor decoded).
const HOSTS = Number(process.env['BENCH_HOSTS'] ?? 500);
const IN_FLIGHT = Number(process.env['BENCH_IN_FLIGHT'] ?? 256);
const FETCHES = Number(process.env['BENCH_FETCHES'] ?? 10_000);
const PAGE_KB = Number(process.env['BENCH_PAGE_KB'] ?? 100);

if (process.argv[2] === 'serve') {
  // ~100 KB of HTML that gzips about 4×, like the brief's average page
  const words = prose('bench page', Math.round((PAGE_KB * 1024) / 8));
  const html = gzipSync(
    Buffer.from(`<!doctype html><html><body><p>${words}</p><a href="/next">next</a></body></html>`),
  );
  const server = createServer((_req, res) => {
    res.writeHead(200, {
      'content-type': 'text/html; charset=utf-8',
      'content-encoding': 'gzip',
      'content-length': html.length,
    });
    res.end(html);
  });
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1', () =>
    process.send!({ port: (server.address() as AddressInfo).port, bytes: html.length }),
  );
} else {
  await main();
}

async function main(): Promise<void> {
  console.log(machineLine());
  const child: ChildProcess = fork(fileURLToPath(import.meta.url), ['serve'], { stdio: 'inherit' });
  const { port, bytes } = await new Promise<{ port: number; bytes: number }>((resolve) =>
    child.once('message', (m) => resolve(m as { port: number; bytes: number })),
  );
  console.log(
    `loopback web: ${HOSTS} hosts, ${PAGE_KB} KB pages sent as ${bytes.toLocaleString('en-US')} B gzip, ${IN_FLIGHT} in flight, ${FETCHES.toLocaleString('en-US')} fetches`,
  );
  const url = (i: number): string => `http://h${i % HOSTS}.bench.test:${port}/p${i}`;
  try {
    await benchClient(url);
    await benchProcessor(url);
  } finally {
    child.kill();
  }
}

async function benchClient(url: (i: number) => string): Promise<void> {
  const client = new HttpClient({
    userAgent: 'crawlstream-bench/1.0 (+https://crawlstream.invalid/bot)',
    resolver: new CachingDnsResolver({ rules: [parseResolveRule('*.bench.test=127.0.0.1')], systemDns: false }),
    guard: new AddressGuard([parseCidr('127.0.0.1/32')]),
  });
  // warm-up opens the keep-alive connections, one per host
  await Promise.all(Array.from({ length: HOSTS }, (_, i) => client.fetch(url(i))));
  let next = 0;
  let errors = 0;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  let peakRss = process.memoryUsage().rss;
  const worker = async (): Promise<void> => {
    while (next < FETCHES) {
      const out = await client.fetch(url(next++));
      if (out.errorCode || out.status !== 200) errors++;
      if ((next & 255) === 0) peakRss = Math.max(peakRss, process.memoryUsage().rss);
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  await client.close();
  figure('http client fetches', FETCHES / seconds, 'fetches/s');
  figure('http client CPU per fetch', (cpu.user + cpu.system) / 1000 / FETCHES, 'ms');
  figure('http client peak RSS', peakRss / 2 ** 20, 'MiB');
  figure('http client errors', errors, 'fetches');
}

async function benchProcessor(url: (i: number) => string): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'crawlstream-bench-fetcher-'));
  const config = validateCrawlConfig({
    resolve: ['*.bench.test=127.0.0.1'],
    allowIps: ['127.0.0.1/32'],
    systemDns: false,
    fetchConcurrency: IN_FLIGHT,
  });
  // only the fetcher's sub-topology runs: the parser's WARC directory is never written
  const topology = crawlTopology({ config, partitions: 1, warcDir: join(dir, 'warc') });
  const driver = await TopologyTestDriver.open({
    topology,
    sourceTopic: TOPICS.fetchRequests,
    dir: join(dir, 'task'),
    startTime: Date.now(),
    captureOutputs: false,
    keepChangelogs: false,
  });
  try {
    const now = Date.now();
    const leases: FetchRequest[] = Array.from({ length: FETCHES }, (_, i) => {
      const u = new URL(url(i));
      return {
        leaseId: `b${i}`,
        ownerEpoch: 1,
        url: u.href,
        host: u.hostname,
        site: u.hostname,
        kind: 'PAGE',
        depth: 0,
        redirectHops: 0,
        attempt: 1,
        issuedAt: now,
        notBefore: 0,
        notAfter: now + 3_600_000,
        ifNoneMatch: null,
        ifModifiedSince: null,
      };
    });
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    let peakRss = process.memoryUsage().rss;
    const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 20);
    try {
      await driver.pipeInputs(
        TOPICS.fetchRequests,
        leases.map((l) => ({ key: l.site, value: l, timestamp: now })),
      );
      driver.commit();
    } finally {
      clearInterval(sampler);
    }
    const seconds = (performance.now() - t0) / 1000;
    const cpu = process.cpuUsage(cpu0);
    const answered = driver.metrics.counter(M.fetchResults, 'PAGE');
    if (answered !== FETCHES) throw new Error(`${answered} of ${FETCHES} leases answered`);
    figure('fetcher processor (task on the test driver) fetches', FETCHES / seconds, 'fetches/s');
    figure('fetcher processor CPU per fetch', (cpu.user + cpu.system) / 1000 / FETCHES, 'ms');
    figure('fetcher processor peak RSS', peakRss / 2 ** 20, 'MiB');
    figure('fetcher processor errors', driver.metrics.total(M.fetchOutcomeErrors), 'fetches');
  } finally {
    await driver.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
