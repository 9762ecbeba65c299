import { test } from 'node:test';
import assert from 'node:assert/strict';
import { coPartitionedAssignment } from '../../runtime/engines/kafka/co-partition-assignment.js';

const plan = (owned: Record<string, number[]>, partitions: number) =>
  Object.fromEntries(
    coPartitionedAssignment(
      Object.entries(owned).map(([memberId, o]) => ({ memberId, owned: o })),
      partitions,
    ),
  );

test('every partition goes to exactly one member and the counts differ by at most one, for any member count', () => {
  for (const partitions of [1, 4, 8, 12]) {
    for (let members = 1; members <= 10; members++) {
      const ids = Array.from({ length: members }, (_, i) => `m${i}`);
      const got = plan(Object.fromEntries(ids.map((id) => [id, []])), partitions);
      const all = Object.values(got)
        .flat()
        .sort((a, b) => a - b);
      assert.deepEqual(
        all,
        Array.from({ length: partitions }, (_, i) => i),
        `${members} members, ${partitions} partitions`,
      );
      const sizes = Object.values(got).map((ps) => ps.length);
      assert.ok(Math.max(...sizes) - Math.min(...sizes) <= 1, `${members}/${partitions}: ${sizes.join(',')}`);
      assert.equal(Object.keys(got).length, members, 'every member gets an entry');
    }
  }
});

test('a member keeps what it owned: a third member takes only what balance needs, and a restarted member gets its partitions back', () => {
  const two = plan({ a: [], b: [] }, 8);
  // a third joins: a and b keep 3 of their 4 each, c gets the two that moved
  const three = plan({ ...two, c: [] }, 8);
  for (const m of ['a', 'b'] as const) {
    const kept = three[m]!.filter((p) => two[m]!.includes(p));
    assert.equal(kept.length, three[m]!.length, `${m} got a partition it did not own`);
    assert.ok(three[m]!.length >= 2);
  }
  assert.equal(three['c']!.length, 8 - three['a']!.length - three['b']!.length);
  // c leaves: its partitions are dealt out, a and b keep theirs
  const back = plan({ a: three['a']!, b: three['b']! }, 8);
  for (const m of ['a', 'b'] as const) for (const p of three[m]!) assert.ok(back[m]!.includes(p), `${m} lost ${p}`);
  // a member that comes back with state for [1, 5] gets those (and half of the rest)
  const restarted = plan({ a: [0, 2, 3, 4, 6, 7], z: [1, 5] }, 8);
  assert.deepEqual(restarted, { a: [0, 2, 3, 4], z: [1, 5, 6, 7] });
});

test('claims beyond the balance, duplicates and out-of-range partitions are ignored', () => {
  const got = plan({ a: [0, 1, 2, 3, 9, -1], b: [0, 1] }, 4);
  assert.deepEqual(got, { a: [0, 1], b: [2, 3] });
  assert.deepEqual(plan({}, 4), {});
});
