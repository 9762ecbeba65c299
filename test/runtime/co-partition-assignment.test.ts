import { test } from 'node:test';
import assert from 'node:assert/strict';
import kafkajs from 'kafkajs';
import { coPartitionedAssignment, planAssignment } from '../../runtime/engines/kafka/co-partition-assignment.js';
import { encodeClaims, encodeStandbys, memberClaims, standbysIn } from '../../runtime/engines/kafka/kafka-admin.js';

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

const planned = (
  members: Record<string, { owned?: number[]; warm?: number[] }>,
  partitions: number,
  replicas: number,
) => {
  const p = planAssignment(
    Object.entries(members).map(([memberId, m]) => ({ memberId, owned: m.owned ?? [], warm: m.warm ?? [] })),
    partitions,
    replicas,
  );
  return { active: Object.fromEntries(p.active), standby: Object.fromEntries(p.standby) };
};

test('standbys: each partition gets min(N, members − 1) of them, never on its active member, spread evenly', () => {
  for (const partitions of [1, 4, 8, 12, 64]) {
    for (let members = 1; members <= 7; members++) {
      for (const replicas of [0, 1, 2, 3]) {
        const ids = Object.fromEntries(Array.from({ length: members }, (_, i) => [`m${i}`, {}]));
        const { active, standby } = planned(ids, partitions, replicas);
        const want = Math.min(replicas, members - 1);
        for (let p = 0; p < partitions; p++) {
          const holders = Object.keys(standby).filter((m) => standby[m]!.includes(p));
          assert.equal(
            holders.length,
            want,
            `${members} members, N=${replicas}: partition ${p} has ${holders.join(',')}`,
          );
          for (const m of holders) assert.ok(!active[m]!.includes(p), `${m} runs ${p} and keeps its standby`);
        }
        const sizes = Object.values(standby).map((ps) => ps.length);
        assert.ok(
          Math.max(...sizes) - Math.min(...sizes) <= 1,
          `${members}/${partitions}/N=${replicas}: ${sizes.join(',')}`,
        );
      }
    }
  }
});

test("a dead member's partitions go to the members with warm copies of them (its standbys), balance first", () => {
  // a, b, c ran 2 partitions each with one standby each; c dies
  const before = planned({ a: {}, b: {}, c: {} }, 6, 1);
  const warmOf = (m: string) => before.standby[m]!;
  const after = planned(
    { a: { owned: before.active['a']!, warm: warmOf('a') }, b: { owned: before.active['b']!, warm: warmOf('b') } },
    6,
    1,
  );
  for (const p of before.active['c']!) {
    const to = Object.keys(after.active).find((m) => after.active[m]!.includes(p))!;
    assert.ok(warmOf(to).includes(p), `partition ${p} went to ${to}, whose warm copies are ${warmOf(to).join(',')}`);
  }
  // a and b kept theirs, and each now keeps a standby of every partition the other runs
  for (const m of ['a', 'b']) for (const p of before.active[m]!) assert.ok(after.active[m]!.includes(p));
  assert.deepEqual(after.standby['a'], after.active['b']);
  assert.deepEqual(after.standby['b'], after.active['a']);
  // the balance wins over a warm copy: a member warm for everything still gets only its share
  const greedy = planned({ a: { warm: [0, 1, 2, 3] }, b: {} }, 4, 0);
  assert.equal(greedy.active['a']!.length, 2);
});

test('standbys stay where warm copies are, and a member that knows nothing of standbys is read as owning its array', () => {
  const first = planned({ a: {}, b: {}, c: {} }, 6, 1);
  const again = planned(
    Object.fromEntries(['a', 'b', 'c'].map((m) => [m, { owned: first.active[m]!, warm: first.standby[m]! }])),
    6,
    1,
  );
  assert.deepEqual(again, first, 'a rebalance with nothing changed moves nothing');
  // the metadata of a member of an earlier version: a bare array of owned partitions
  const legacy = kafkajs.AssignerProtocol.MemberMetadata.encode({
    version: 1,
    topics: ['t'],
    userData: Buffer.from('[1,3]'),
  });
  assert.deepEqual(memberClaims(legacy), { owned: [1, 3], warm: [] });
  const current = kafkajs.AssignerProtocol.MemberMetadata.encode({
    version: 1,
    topics: ['t'],
    userData: encodeClaims({ owned: [0], warm: [2, 'x' as unknown as number] }),
  });
  assert.deepEqual(memberClaims(current), { owned: [0], warm: [2] });
  const garbage = kafkajs.AssignerProtocol.MemberMetadata.encode({
    version: 1,
    topics: ['t'],
    userData: Buffer.from('{'),
  });
  assert.deepEqual(memberClaims(garbage), { owned: [], warm: [] });
  // a leader's assignment: the standbys ride in its user data; one without them names none
  const assignment = (userData: Buffer) =>
    kafkajs.AssignerProtocol.MemberAssignment.encode({ version: 1, assignment: { t: [0] }, userData });
  assert.deepEqual(standbysIn(assignment(encodeStandbys([4, 5]))), [4, 5]);
  assert.deepEqual(standbysIn(assignment(Buffer.alloc(0))), []);
});
