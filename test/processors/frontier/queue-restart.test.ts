import { test } from 'node:test';
import assert from 'node:assert/strict';
import { validateCrawlConfig } from '../../../processors/common/crawl-config.js';
import { TOPICS } from '../../../topology/crawl-topology.js';
import type { FetchRequest, FetchResult, LinkBatch } from '../../../schemas/types.js';
import { fetchResultFor } from './fake-fetcher.js';
import { FrontierHarness } from './frontier-harness.js';

const HOSTS = ['a.test', 'b.test', 'c.test'];
const PER_HOST = 150;
const urlsOf = (host: string) => Array.from({ length: PER_HOST }, (_, i) => `http://${host}/p/${i}`);

const FETCH_MS = 10;

/** One fetch as the web saw it: when it started and ended. */
interface Fetch {
  readonly host: string;
  readonly start: number;
  readonly end: number;
}

function answer(r: FetchRequest, startedAt: number): FetchResult {
  return fetchResultFor(r, startedAt, { durationMs: FETCH_MS });
}

test(
  'chunked queues through commits and crashes: every URL leased exactly once, one lease at a time per host, a gap apart',
  { timeout: 120_000 },
  async () => {
    // two slots for three hosts: the third waits in the front queues until one drains
    const config = validateCrawlConfig({ activeHostSlots: 2, sitePageBudget: 10_000 });
    const h = await FrontierHarness.open(config);
    try {
      for (const host of HOSTS) {
        const urls = urlsOf(host);
        for (let i = 0; i < urls.length; i += 50) {
          const batch: LinkBatch = {
            site: host,
            sourceUrl: null,
            discoveredAt: h.clock,
            links: urls.slice(i, i + 50).map((url) => ({ url, depth: 1, redirectHops: 0 })),
          };
          h.feed(TOPICS.links, host, batch);
        }
      }
      h.commit();
      const answered = new Set<string>();
      const fetches: Fetch[] = [];
      let seed = 7;
      const rnd = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32;
      let crashes = 0;
      for (let step = 0; step < 5_000; step++) {
        // a fetcher sees committed leases only (the last commit was at this time), starts each at
        // its notBefore or when it sees it, and answers each once, after the fetch
        const seenAt = h.clock;
        await h.advance(300);
        for (const r of h.committed()) {
          if (answered.has(r.leaseId)) continue;
          answered.add(r.leaseId);
          const start = Math.max(r.notBefore, seenAt);
          fetches.push({ host: r.host, start, end: start + FETCH_MS });
          h.feed(TOPICS.fetchResults, r.site, answer(r, start));
        }
        const roll = rnd();
        if (roll < 0.08) {
          await h.crash();
          crashes++;
        } else if (roll < 0.6) {
          h.commit();
        }
        const pages = h.committed().filter((r) => r.kind === 'PAGE').length;
        if (pages === HOSTS.length * PER_HOST && answered.size === h.committed().length) break;
      }
      h.commit();
      assert.ok(crashes >= 5, `only ${crashes} crashes`);
      const leases = h.committed();
      for (const host of HOSTS) {
        // order within a host is not FIFO overall: URLs that waited in the front queues for a slot
        // join the back queue behind later ones that came while the host already held one
        const pages = leases.filter((r) => r.host === host && r.kind === 'PAGE').map((r) => r.url);
        assert.deepEqual(pages.sort(), urlsOf(host).sort(), `${host}: pages leased twice or not at all`);
        assert.equal(leases.filter((r) => r.host === host && r.kind === 'ROBOTS').length, 1);
      }
      // one fetch at a time per host, a full gap apart, as the web saw them: from the end of one
      // fetch to the start of the next
      for (const host of HOSTS) {
        const mine = fetches.filter((f) => f.host === host);
        for (let i = 1; i < mine.length; i++) {
          const gap = mine[i]!.start - mine[i - 1]!.end;
          assert.ok(gap >= config.minDelayMs, `${host}: fetch ${i} started ${gap} ms after fetch ${i - 1} ended`);
        }
      }
      assert.equal(h.task.isIdle(), true);
    } finally {
      await h.close();
    }
  },
);
