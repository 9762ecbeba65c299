import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CrawlError } from '../../../core/errors.js';
import { HostSlots } from '../../../processors/frontier/host-slots.js';
import { seededRandom } from '../../../synthetic-web/seeded-random.js';

const HOSTS = ['a.test', 'b.test', 'c.test', 'd.test', 'e.test', 'f.test', 'g.test', 'h.test'];
/** Hosts of one site share a letter pair: a/b, c/d, ... */
const siteOf = (host: string) => `site-${Math.floor(HOSTS.indexOf(host) / 2)}`;

/** What the transitions should do, kept in plain sets: the reference the random walk checks against. */
class Model {
  readonly active = new Set<string>();
  readonly parked = new Set<string>();
  readonly held = new Map<string, string>();
  readonly scheduled = new Map<string, number>();
  readonly leases = new Map<string, { host: string; expiresAt: number }>();
  queued = 0;
  leased(host: string): string | undefined {
    for (const [id, l] of this.leases) if (l.host === host) return id;
    return undefined;
  }
  put(host: string, at: number): void {
    const was = this.scheduled.get(host);
    if (was === undefined || at < was) this.scheduled.set(host, at);
  }
}

/** Every invariant of HostSlots' doc comment, read through its public queries, and agreement with the model. */
function checkInvariants(s: HostSlots, m: Model): void {
  for (const h of HOSTS) {
    const leased = s.isLeased(h);
    const held = s.isHeld(h, siteOf(h));
    if (s.isParked(h)) assert.ok(s.isActive(h), `parked ⊆ active: ${h}`);
    if (held) assert.ok(s.isActive(h), `held ⊆ active: ${h}`);
    if (leased) assert.ok(s.isActive(h), `leased ⊆ active: ${h}`);
    if (s.isScheduled(h)) assert.ok(s.isActive(h), `scheduled ⊆ active: ${h}`);
    if (leased) assert.ok(!s.isScheduled(h) && !held, `a leased host is out of the heap and not held: ${h}`);
    if (held) assert.ok(!s.isScheduled(h), `a held host is out of the heap: ${h}`);
    assert.equal(s.isActive(h), m.active.has(h), `active ${h}`);
    assert.equal(s.isParked(h), m.parked.has(h), `parked ${h}`);
    assert.equal(held, m.held.has(h), `held ${h}`);
    assert.equal(leased, m.leased(h) !== undefined, `leased ${h}`);
    assert.equal(s.isScheduled(h), m.scheduled.has(h), `scheduled ${h}`);
  }
  assert.deepEqual(new Set(s.activeHosts), m.active);
  assert.equal(s.activeCount, m.active.size);
  assert.equal(s.parkedCount, m.parked.size);
  assert.equal(s.scheduledCount, m.scheduled.size);
  assert.equal(s.leaseCount, m.leases.size);
  assert.ok(s.backQueued >= 0, 'backQueued is never negative');
  assert.equal(s.backQueued, m.queued);
  const waiting = [...s.waitingHosts()];
  assert.equal(new Set(waiting).size, waiting.length, 'a waiting host is listed once');
  assert.deepEqual(new Set(waiting), new Set([...m.parked, ...m.held.keys()]));
  const earliest = Math.min(...m.scheduled.values());
  assert.equal(s.peekTime(), m.scheduled.size === 0 ? undefined : earliest);
}

function refused(fn: () => unknown, what: RegExp): void {
  assert.throws(fn, (e: unknown) => e instanceof CrawlError && e.code === 'CS_INTERNAL' && what.test(e.message));
}

/**
 * One random step: picks a transition and a host, predicts from the model whether it is legal,
 * applies it, and checks that a legal one did what the model says and an illegal one threw and
 * changed nothing.
 */
function step(s: HostSlots, m: Model, random: () => number, now: { t: number; lease: number }): string {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
  const host = pick(HOSTS);
  const site = siteOf(host);
  const at = now.t + Math.floor(random() * 50);
  const op = pick([
    'activate',
    'activate',
    'deactivate',
    'park',
    'unpark',
    'schedule',
    'schedule',
    'wake',
    'popDue',
    'popDue',
    'hold',
    'resume',
    'lease',
    'lease',
    'release',
    'expire',
    'queuedMore',
    'dequeued',
    'tick',
  ] as const);
  const label = `${op}(${host}, ${at})`;
  const illegal = (fn: () => unknown) => {
    const before = JSON.stringify(snapshot(s));
    assert.throws(fn, (e: unknown) => e instanceof CrawlError && e.code === 'CS_INTERNAL', `${label} must be refused`);
    assert.equal(JSON.stringify(snapshot(s)), before, `${label} refused but changed the slots`);
  };
  switch (op) {
    case 'activate':
      assert.equal(s.activate(host), !m.active.has(host));
      m.active.add(host);
      break;
    case 'deactivate':
      if (m.leased(host) !== undefined) return (illegal(() => s.deactivate(host)), label);
      s.deactivate(host);
      m.active.delete(host);
      m.parked.delete(host);
      m.held.delete(host);
      m.scheduled.delete(host);
      break;
    case 'park':
      if (!m.active.has(host)) return (illegal(() => s.park(host)), label);
      s.park(host);
      m.parked.add(host);
      break;
    case 'unpark':
      s.unpark(host);
      m.parked.delete(host);
      break;
    case 'schedule':
      if (!m.active.has(host) || m.leased(host) !== undefined) return (illegal(() => s.schedule(host, at)), label);
      assert.equal(s.schedule(host, at), !m.held.has(host));
      if (!m.held.has(host)) m.put(host, at);
      break;
    case 'wake': {
      const hosts = [host, pick(HOSTS)];
      const expect = hosts.filter((h) => m.active.has(h) && m.leased(h) === undefined && !m.held.has(h));
      assert.equal(s.wake(hosts, at), expect.length);
      for (const h of expect) m.put(h, at);
      break;
    }
    case 'popDue': {
      const horizon = now.t + 25;
      const got = s.popDue(horizon);
      const due = [...m.scheduled].filter(([, t]) => t <= horizon);
      if (due.length === 0) {
        assert.equal(got, undefined, 'nothing is due');
        break;
      }
      const min = Math.min(...due.map(([, t]) => t));
      assert.ok(got !== undefined, 'a due host is handed out');
      assert.equal(got.at, min, 'the earliest first');
      assert.equal(m.scheduled.get(got.host), min, `${got.host} was scheduled at ${min}`);
      m.scheduled.delete(got.host);
      break;
    }
    case 'hold': {
      const wrongSite = m.held.has(host) && m.held.get(host) !== site;
      if (!m.active.has(host) || m.leased(host) !== undefined || m.scheduled.has(host) || wrongSite)
        return (illegal(() => s.hold(host, site)), label);
      s.hold(host, site);
      m.held.set(host, site);
      break;
    }
    case 'resume': {
      const expect = [...m.held].filter(([, st]) => st === site).map(([h]) => h);
      assert.deepEqual(new Set(s.resume(site, at)), new Set(expect));
      for (const h of expect) {
        m.held.delete(h);
        m.put(h, at);
      }
      break;
    }
    case 'lease': {
      const reuse = m.leases.size > 0 && random() < 0.1;
      const id = reuse ? pick([...m.leases.keys()]) : `1-0-${(now.lease++).toString(36)}`;
      const legal =
        m.active.has(host) &&
        m.leased(host) === undefined &&
        !m.scheduled.has(host) &&
        !m.held.has(host) &&
        !m.leases.has(id);
      if (!legal) return (illegal(() => s.lease(host, id, at + 100)), label);
      s.lease(host, id, at + 100);
      m.leases.set(id, { host, expiresAt: at + 100 });
      break;
    }
    case 'release': {
      const id = m.leases.size > 0 && random() < 0.8 ? pick([...m.leases.keys()]) : 'no-such-lease';
      assert.equal(s.release(id), m.leases.get(id)?.host);
      m.leases.delete(id);
      break;
    }
    case 'expire': {
      const expect = [...m.leases].filter(([, l]) => l.expiresAt <= now.t).map(([id]) => id);
      const got = s.expired(now.t);
      assert.deepEqual(new Set(got.map(([id]) => id)), new Set(expect));
      for (const [id, slot] of got) assert.equal(slot.host, m.leases.get(id)!.host);
      break;
    }
    case 'queuedMore': {
      const n = Math.floor(random() * 4);
      s.queuedMore(n);
      m.queued += n;
      break;
    }
    case 'dequeued': {
      const n = Math.floor(random() * 4);
      if (n > m.queued) return (illegal(() => s.dequeued(n)), label);
      s.dequeued(n);
      m.queued -= n;
      break;
    }
    case 'tick':
      now.t += Math.floor(random() * 40);
      break;
  }
  return label;
}

/** Everything the slots answer, to show a refused transition changed nothing. */
function snapshot(s: HostSlots): unknown {
  return {
    hosts: HOSTS.map((h) => [s.isActive(h), s.isParked(h), s.isHeld(h, siteOf(h)), s.isLeased(h), s.isScheduled(h)]),
    leases: s.leaseCount,
    queued: s.backQueued,
    expired: s.expired(Number.MAX_SAFE_INTEGER),
  };
}

function walk(seed: number, steps: number): void {
  const random = seededRandom(seed);
  const s = new HostSlots();
  const m = new Model();
  const now = { t: 1_000, lease: 0 };
  const trail: string[] = [];
  for (let i = 0; i < steps; i++) {
    try {
      trail.push(step(s, m, random, now));
      if (trail.length > 12) trail.shift();
      checkInvariants(s, m);
    } catch (e) {
      const msg = e instanceof Error ? e.message : String(e);
      throw new Error(
        `host slots random walk failed: seed ${seed}, step ${i} (HOST_SLOTS_SEED=${seed} reproduces it)\n` +
          `last steps: ${trail.join(' → ')}\n${msg}`,
        { cause: e },
      );
    }
  }
}

test('every transition keeps the invariants and agrees with the model, on random sequences of fixed seeds', () => {
  for (const seed of [1, 2, 3, 34, 2026]) walk(seed, 5_000);
});

test('the invariants hold on a random sequence of a new seed each run (printed on failure)', () => {
  const seed = Number(process.env.HOST_SLOTS_SEED ?? (Date.now() ^ process.pid) >>> 0);
  walk(seed, 20_000);
});

function slotsWith(setup: (s: HostSlots) => void): HostSlots {
  const s = new HostSlots();
  setup(s);
  return s;
}

test('a host without an active slot cannot be parked, scheduled, held or leased', () => {
  const s = new HostSlots();
  refused(() => s.park('a.test'), /park\(a\.test\).*no active slot/);
  refused(() => s.schedule('a.test', 1), /schedule\(a\.test\).*no active slot/);
  refused(() => s.hold('a.test', 'site-0'), /hold\(a\.test\).*no active slot/);
  refused(() => s.lease('a.test', 'l1', 10), /lease\(a\.test\).*no active slot/);
  assert.equal(s.activeCount, 0);
});

test('a leased host cannot be deactivated, scheduled, held or leased again', () => {
  const s = slotsWith((s) => {
    s.activate('a.test');
    s.lease('a.test', 'l1', 10);
  });
  refused(() => s.deactivate('a.test'), /deactivate\(a\.test\).*holds a lease/);
  refused(() => s.schedule('a.test', 1), /schedule\(a\.test\).*holds a lease/);
  refused(() => s.hold('a.test', 'site-0'), /hold\(a\.test\).*holds a lease/);
  refused(() => s.lease('a.test', 'l2', 10), /lease\(a\.test\).*holds lease l1/);
  assert.ok(s.isActive('a.test') && s.isLeased('a.test') && !s.isScheduled('a.test'));
  // waking it (the per-IP limit freed its address) leaves it leased, out of the heap
  assert.equal(s.wake(['a.test'], 5), 0);
  assert.equal(s.popDue(100), undefined);
});

test('a scheduled host cannot be leased or held until it is popped', () => {
  const s = slotsWith((s) => {
    s.activate('a.test');
    s.schedule('a.test', 10);
  });
  refused(() => s.lease('a.test', 'l1', 100), /lease\(a\.test\).*scheduled/);
  refused(() => s.hold('a.test', 'site-0'), /hold\(a\.test\).*scheduled/);
  assert.deepEqual(s.popDue(10), { host: 'a.test', at: 10 });
  s.lease('a.test', 'l1', 100);
  assert.ok(s.isLeased('a.test'));
});

test('a held host cannot be leased, is held for one site only, and stays held when scheduled', () => {
  const s = slotsWith((s) => {
    s.activate('a.test');
    s.hold('a.test', 'site-0');
  });
  refused(() => s.lease('a.test', 'l1', 100), /lease\(a\.test\).*held/);
  refused(() => s.hold('a.test', 'site-9'), /hold\(a\.test\).*held for site site-0/);
  assert.equal(s.schedule('a.test', 5), false);
  assert.equal(s.wake(['a.test'], 5), 0);
  assert.equal(s.popDue(100), undefined, 'a held host is not handed out');
  assert.deepEqual(s.resume('site-0', 7), ['a.test']);
  assert.deepEqual(s.popDue(100), { host: 'a.test', at: 7 });
});

test('a lease id names one host', () => {
  const s = slotsWith((s) => {
    s.activate('a.test');
    s.activate('b.test');
    s.lease('a.test', 'l1', 100);
  });
  refused(() => s.lease('b.test', 'l1', 100), /lease\(b\.test\).*lease id l1 is in use/);
  assert.equal(s.release('l1'), 'a.test');
  assert.equal(s.release('l1'), undefined, 'a lease ends once');
});

test('more URLs cannot leave the back queues than are queued, nor a negative count join them', () => {
  const s = new HostSlots();
  s.queuedMore(2);
  refused(() => s.dequeued(3), /dequeued\(3\).*2 are queued/);
  refused(() => s.queuedMore(-1), /queuedMore\(-1\)/);
  refused(() => s.dequeued(-1), /dequeued\(-1\)/);
  assert.equal(s.backQueued, 2);
});

test('a host rescheduled earlier is handed out once, at the earlier time', () => {
  const s = new HostSlots();
  s.activate('a.test');
  s.schedule('a.test', 50);
  s.schedule('a.test', 20);
  s.schedule('a.test', 80);
  assert.equal(s.scheduledCount, 1);
  assert.deepEqual(s.popDue(100), { host: 'a.test', at: 20 });
  assert.equal(s.popDue(100), undefined);
});

test('deactivating a host takes it out of every state and frees its slot for counting', () => {
  const s = new HostSlots();
  for (const h of ['a.test', 'b.test', 'c.test']) s.activate(h);
  s.park('a.test');
  s.schedule('a.test', 10);
  s.hold('b.test', 'site-0');
  assert.equal(s.freeSlots(3), 1, 'a parked host gives its slot up');
  s.deactivate('a.test');
  s.deactivate('b.test');
  assert.deepEqual([...s.activeHosts], ['c.test']);
  assert.equal(s.popDue(100), undefined);
  assert.deepEqual([...s.waitingHosts()], []);
  assert.deepEqual(s.resume('site-0', 5), []);
  assert.equal(s.freeSlots(3), 2);
});
