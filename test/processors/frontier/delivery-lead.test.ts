import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  DELIVERY_LEAD_HALF_LIFE_MS,
  DeliveryLead,
  MAX_DELIVERY_LEAD_MS,
} from '../../../processors/frontier/delivery-lead.js';
import { IP_START_WINDOW_MS, IpLimiter } from '../../../processors/frontier/ip-limiter.js';
import { newHost } from '../../../processors/frontier/host-state.js';
import { GAP_SAFETY_MS } from '../../../processors/frontier/politeness.js';

const host = (name: string, ip: string | null = null) => ({ ...newHost(name, `http://${name}`, name), ip });

test('the delivery lead is 0 until a lease comes late, then covers what it took with a margin, and halves every half-life', () => {
  const lead = new DeliveryLead();
  assert.equal(lead.at(0), 0);
  lead.late(1_000, 1_800, 2_000); // took 800 ms: + max(100, 200)
  assert.equal(lead.at(2_000), 1_000);
  lead.late(3_000, 3_300, 3_500); // took 300 ms: + 100, less than the lead now
  assert.equal(lead.at(3_500), Math.round(1_000 * 2 ** (-1_500 / DELIVERY_LEAD_HALF_LIFE_MS)));
  assert.equal(lead.at(2_000 + DELIVERY_LEAD_HALF_LIFE_MS), 500);
  assert.equal(lead.at(2_000 + 20 * DELIVERY_LEAD_HALF_LIFE_MS), 0, 'a pipeline that sped up plans ahead no more');
  // a later, slower one raises it again, to the cap at most; times that are not a delivery are ignored
  lead.late(0, 60_000, 100_000);
  assert.equal(lead.at(100_000), MAX_DELIVERY_LEAD_MS);
  for (const arrived of [NaN, -5, 100_000]) lead.late(100_000, arrived, 100_000);
  assert.equal(lead.at(100_000), MAX_DELIVERY_LEAD_MS);
});

test("with Kafka's slots a lease is planned no sooner than the lead after its issue; only a lease found late by more than a window teaches it", () => {
  const gapMs = 100;
  const slotMs = gapMs + GAP_SAFETY_MS + IP_START_WINDOW_MS;
  const tasks = [0, 1].map((partition) => new IpLimiter(8, gapMs, undefined, { partition, partitions: 2 }));
  const task = tasks[0]!;
  const now = 1_000_000;
  assert.equal(task.leadMs(now), 0);
  // found late by less than a window: it may have woken late in its fetcher; nothing learnt
  const notAfter = now - 2_000 + IP_START_WINDOW_MS / 2;
  task.arrivedLate(now - 2_000, notAfter, notAfter + IP_START_WINDOW_MS, now);
  assert.equal(task.leadMs(now), 0);
  // found 1,200 ms after its issue, a second past its window: later leases are planned 1,500 ms ahead
  task.arrivedLate(now - 1_200, now - 1_200 + 100, now, now);
  assert.equal(task.leadMs(now), 1_500);
  const start = task.tryAcquire(host('a.test', '10.0.0.1'), now, now)!;
  assert.ok(start >= now + 1_500 && start < now + 1_500 + 2 * slotMs, `planned at +${start - now} ms`);
  assert.equal(start % slotMs, 0, 'a slot start');
  // a host due later than the lead is planned for when it is due, in its slot
  const due = now + 5_000;
  const later = task.tryAcquire(host('b.test', '10.0.0.2'), due, now)!;
  assert.ok(later >= due && later < due + 2 * slotMs);
  // a host with no known address waits for no slot, and so for no lead
  assert.equal(task.tryAcquire(host('c.test', null), now, now), now);
  // the other task learnt nothing: each task learns from its own leases
  assert.equal(tasks[1]!.leadMs(now), 0);
});

test('without slots (one task, or tasks sharing a clock) nothing is learnt: the lease window is the usual one', () => {
  const ips = new IpLimiter(8, 100);
  ips.arrivedLate(0, 50, 5_000, 5_000);
  assert.equal(ips.leadMs(5_000), 0);
  assert.equal(ips.tryAcquire(host('a.test', '10.0.0.1'), 5_000, 5_000), 5_000);
});
