import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseControlArgs } from '../../cli/control.js';
import { resolveSettings } from '../../cli/config-sources.js';
import { SETTINGS, type Setting } from '../../cli/settings.js';
import { isCrawlError } from '../../core/errors.js';
import {
  CRAWL_CONFIG_BOUNDS,
  defaultCrawlConfig,
  validateCrawlConfig,
  type Bounds,
  type CrawlConfig,
} from '../../processors/common/crawl-config.js';
import { parseLiveSettings, parseSiteOverride } from '../../processors/common/site-overrides.js';

/** Whether `f` refuses with a CS_INVALID_OPTION whose first line matches `bound` (a bounds refusal); other refusals pass. */
function refusedBy(f: () => unknown, bound: RegExp): boolean {
  try {
    f();
    return false;
  } catch (err) {
    assert.ok(isCrawlError(err) && err.code === 'CS_INVALID_OPTION', `unexpected ${String(err)}`);
    return bound.test(err.message.split('\n')[0]!);
  }
}

/** The flag refuses `value` (text in the setting's unit) for being out of its bounds or of its kind. */
const flagRefuses = (s: Setting, value: number): boolean =>
  refusedBy(() => resolveSettings([`--${s.name}=${value}`], {}, '', 'crawl'), new RegExp(`^--${s.name} must be `));

/** validateCrawlConfig refuses `value` for `key` by that field's bounds (a rule between fields is not a bound). */
const libraryRefuses = (key: keyof CrawlConfig, value: number): boolean =>
  refusedBy(() => validateCrawlConfig({ [key]: value }), new RegExp(`^${key} must be `));

const bounded = (key: string): Bounds | undefined => (CRAWL_CONFIG_BOUNDS as Record<string, Bounds>)[key];

/** Values around each end of the flag's own range and of the field's, in the setting's unit. */
function probesOf(s: Setting, b: Bounds | undefined): number[] {
  const scale = s.scale ?? 1;
  const ends = [s.min, s.max, b?.min, b?.max].flatMap((v, i) => (v === undefined ? [] : [i < 2 ? v : v / scale]));
  const near = ends.flatMap((e) => [e, e - 1, e + 1, e - 0.5, e + 0.5, e - 0.001, e + 0.001]);
  const all = [...near, Number(s.default ?? 0), -1, 0, 1e12];
  // a whole-number flag cannot say 0.5 of its unit; the library's fractions of it are the flag's unit's business
  return [...new Set(all)].filter((v) => s.kind === 'number' || Number.isInteger(v));
}

test('every numeric setting of a CrawlConfig field refuses exactly what validateCrawlConfig refuses at both ends', () => {
  const numeric = SETTINGS.filter((s) => s.config !== undefined && (s.kind === 'int' || s.kind === 'number'));
  const numericFields = (Object.keys(defaultCrawlConfig) as (keyof CrawlConfig)[]).filter(
    (k) => typeof defaultCrawlConfig[k] === 'number',
  );
  // every numeric field has a setting, so the loop below covers every bound the library enforces
  assert.deepEqual(numeric.map((s) => s.config).sort(), [...numericFields].sort());
  for (const s of numeric) {
    const key = s.config!;
    const scale = s.scale ?? 1;
    for (const q of probesOf(s, bounded(key)))
      assert.equal(
        flagRefuses(s, q),
        libraryRefuses(key, q * scale),
        `--${s.name}=${q} and ${key}=${q * scale}: one refuses, the other takes it`,
      );
    // the kind agrees: a whole-number field has a whole-number flag, a fraction a number flag
    if (scale === 1) {
      const inside =
        (s.min ?? 0) + (s.max !== undefined && s.max - (s.min ?? 0) < 1 ? (s.max - (s.min ?? 0)) / 2 : 0.5);
      assert.equal(s.kind === 'int', libraryRefuses(key, inside), `--${s.name} is ${s.kind} but ${key}=${inside}`);
    }
  }
});

test('every numeric CrawlConfig field has bounds the library enforces', () => {
  for (const key of Object.keys(defaultCrawlConfig) as (keyof CrawlConfig)[]) {
    if (typeof defaultCrawlConfig[key] !== 'number') continue;
    assert.ok(bounded(key), `CrawlConfig.${key} has no bounds`);
    for (const junk of [NaN, Infinity, -Infinity, -1e15, 1e300 * 10])
      assert.ok(libraryRefuses(key, junk), `${key}=${junk} is taken`);
    assert.equal(libraryRefuses(key, defaultCrawlConfig[key] as number), false, `${key}'s default is refused`);
  }
});

test("a sites: entry, control set and control slow take the crawl-wide flag's bounds", () => {
  const flag = (name: string): Setting => SETTINGS.find((s) => s.name === name)!;
  // each numeric override and the flag of the crawl-wide value it replaces
  for (const [override, crawlFlag, key] of [
    ['min-delay', 'min-delay', 'example.org'],
    ['budget', 'site-budget', 'example.org'],
    ['max-depth', 'max-depth', 'example.org'],
  ] as const) {
    const s = flag(crawlFlag);
    for (const q of probesOf(s, undefined)) {
      const byFlag = flagRefuses(s, q);
      const inFile = refusedBy(
        () => parseSiteOverride(key, { [override]: q }, 'crawl.yaml'),
        new RegExp(`^crawl\\.yaml: sites\\.${key.replace(/\./g, '\\.')}\\.${override} must be `),
      );
      const live = refusedBy(
        () => parseLiveSettings({ [override]: String(q) }),
        new RegExp(`^control set: ${override} must be `),
      );
      assert.equal(inFile, byFlag, `sites: ${override}=${q} vs --${crawlFlag}=${q}`);
      assert.equal(live, byFlag, `control set ${override}=${q} vs --${crawlFlag}=${q}`);
    }
  }
  const minDelay = flag('min-delay');
  for (const q of probesOf(minDelay, undefined))
    assert.equal(
      refusedBy(
        () => parseControlArgs(['slow', 'example.org', '--data', 'd', `--min-gap=${q}`], 0, {}),
        /^--min-gap must be /,
      ),
      flagRefuses(minDelay, q),
      `control slow --min-gap=${q} vs --min-delay=${q}`,
    );
});
