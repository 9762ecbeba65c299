import { test } from 'node:test';
import assert from 'node:assert/strict';
import { validateCrawlConfig } from '../../../processors/common/crawl-config.js';
import { TOPICS } from '../../../topology/crawl-topology.js';
import type { LinkBatch } from '../../../schemas/types.js';
import { FrontierHarness } from './frontier-harness.js';

const SITE = 'runs.test';
const url = (i: number) => `http://${SITE}/p/${i}`;

function batch(h: FrontierHarness, from: number, to: number): LinkBatch {
  const links = [];
  for (let i = from; i < to; i++) links.push({ url: url(i), depth: 1, redirectHops: 0 });
  return { site: SITE, sourceUrl: null, discoveredAt: h.clock, links };
}

/**
 * A frontier whose seen-set holds 2,000 URLs, all still in runs (the default sweep waits for
 * 65,536), reopened: its seen-set warming, no run read yet, no punctuator run.
 */
async function reopened(): Promise<FrontierHarness> {
  const h = await FrontierHarness.open(validateCrawlConfig({ sitePageBudget: 100_000 }));
  for (let i = 0; i < 2_000; i += 100) h.feed(TOPICS.links, SITE, batch(h, i, i + 100));
  h.commit();
  await h.crash();
  return h;
}

test('a link batch before the seen-set has read its runs waits for them off the thread, and finds every URL seen before', async () => {
  const h = await reopened();
  try {
    const seenBefore = h.driver.metrics.counter('urls_seen');
    // 50 URLs recorded before the reopening, 50 new ones
    const pending = h.driver.pipeInput(TOPICS.links, SITE, batch(h, 1_950, 2_050));
    // reading the runs at once (O(unmerged fingerprints)) would hold the task's thread: the batch waits instead
    assert.ok(pending instanceof Promise, 'the batch was admitted synchronously, reading every run at once');
    await pending;
    assert.equal(h.driver.metrics.counter('urls_seen') - seenBefore, 50, 'URLs recorded before the reopening');
    await h.advance(1_000); // the gauges' punctuator
    assert.equal(h.driver.metrics.gauge('seen_set_runs_forced'), 0, 'a check read the runs at once');
    // the 50 new ones were recorded: a second batch finds all 100 seen, synchronously now
    const again = h.driver.pipeInput(TOPICS.links, SITE, batch(h, 1_950, 2_050));
    assert.equal(again, undefined, 'the runs were read: a batch needs no wait');
    assert.equal(h.driver.metrics.counter('urls_seen') - seenBefore, 150);
  } finally {
    await h.close();
  }
});

test('a task closed while a link batch waits for the runs admits nothing of it; its next opening admits it once', async () => {
  const h = await reopened();
  try {
    const seenBefore = h.driver.metrics.counter('urls_seen');
    const pending = h.driver.pipeInput(TOPICS.links, SITE, batch(h, 1_950, 2_050));
    assert.ok(pending instanceof Promise);
    // a crash closes the task and replays the uncommitted batch into the next opening
    await h.crash();
    await pending;
    // the next opening found the 50 recorded ones seen and admitted the 50 new ones; the closed
    // task, had it gone on, would have admitted the batch into the next opening's state as well
    assert.equal(h.driver.metrics.counter('urls_seen') - seenBefore, 50);
    await h.advance(1_000);
    const again = h.driver.pipeInput(TOPICS.links, SITE, batch(h, 1_950, 2_050));
    assert.equal(again, undefined);
    assert.equal(h.driver.metrics.counter('urls_seen') - seenBefore, 150, 'the new URLs were admitted once');
  } finally {
    await h.close();
  }
});
