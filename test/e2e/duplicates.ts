import assert from 'node:assert/strict';
import type { PageRecord } from '../../schemas/types.js';
import { warcioIndex } from '../python/warcio.js';

/** Pages of the standard test web that are copies of each other (sites.ts): byte-identical or near. */
export function copyGroups(port: number): { exact: string[][]; near: string[][] } {
  const u = (host: string, path: string) => `http://${host}:${port}${path}`;
  return {
    exact: [
      [u('www.alpha.test', '/a.html'), u('mirror.test', '/')],
      [u('www.alpha.test', '/b.html'), u('mirror.test', '/b.html')],
      [u('www.alpha.test', '/c.html'), u('mirror.test', '/c.html')],
    ],
    near: [[u('news.test', '/'), u('news.test', '/story.html'), u('news.test', '/print/story.html')]],
  };
}

/**
 * Asserts that ≥ 95 % of the expected copies among `records` carry `duplicateOf` (an original of
 * their own group, which is itself no copy), that no page outside a group is marked a copy, and
 * that copies publish no outlinks. Returns the copies found and how many were expected.
 */
export function assertCopiesRecorded(
  records: PageRecord[],
  port: number,
): { exact: PageRecord[]; near: PageRecord[]; expected: number } {
  const groups = copyGroups(port);
  const byUrl = new Map(records.map((r) => [r.url, r]));
  const groupOf = new Map<string, string[]>();
  for (const g of [...groups.exact, ...groups.near]) for (const url of g) groupOf.set(url, g);
  let expected = 0;
  const found: { exact: PageRecord[]; near: PageRecord[] } = { exact: [], near: [] };
  for (const [kind, list] of [
    ['exact', groups.exact],
    ['near', groups.near],
  ] as const) {
    for (const group of list) {
      const fetched = group
        .map((url) => byUrl.get(url))
        .filter((r): r is PageRecord => r !== undefined && r.status === 200);
      expected += Math.max(0, fetched.length - 1);
      for (const r of fetched) if (r.duplicateOf !== null) found[kind].push(r);
      assert.ok(
        fetched.filter((r) => r.duplicateOf === null).length <= 1,
        `more than one original in ${group.join(', ')}`,
      );
    }
  }
  const copies = [...found.exact, ...found.near];
  assert.ok(expected >= 5, `only ${expected} copies were fetched; the test web has 5`);
  assert.ok(copies.length >= 0.95 * expected, `${copies.length} of ${expected} copies recorded as copies`);
  for (const r of records) {
    if (r.duplicateOf === null) continue;
    const group = groupOf.get(r.url);
    assert.ok(group !== undefined, `${r.url} is no copy but was recorded as one of ${r.duplicateOf}`);
    assert.ok(
      group.includes(r.duplicateOf) && r.duplicateOf !== r.url,
      `${r.url} is recorded as a copy of ${r.duplicateOf}`,
    );
    assert.equal(
      byUrl.get(r.duplicateOf)?.duplicateOf ?? null,
      null,
      `${r.url} points at ${r.duplicateOf}, itself a copy`,
    );
    assert.equal(r.outlinkCount, 0, `the links of copy ${r.url} were followed`);
  }
  return { ...found, expected };
}

/** Revisit records in the WARC files, as warcio indexes them. */
export function warcRevisits(files: string[]): { url: string; refersTo: string; profile: string }[] {
  const out: { url: string; refersTo: string; profile: string }[] = [];
  for (const file of files) {
    for (const r of warcioIndex(file, ['warc-type', 'warc-target-uri', 'warc-refers-to-target-uri', 'warc-profile'])) {
      if (r['warc-type'] !== 'revisit') continue;
      out.push({ url: r['warc-target-uri']!, refersTo: r['warc-refers-to-target-uri']!, profile: r['warc-profile']! });
    }
  }
  return out;
}
