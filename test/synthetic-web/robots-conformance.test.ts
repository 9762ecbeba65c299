import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  isValidProductToken,
  normalizePattern,
  ROBOTS_MAX_BYTES,
  robotsPathOf,
  RobotsTxt,
} from '../../synthetic-web/robots-rfc9309.js';
import {
  ESCAPE_CASES,
  lineTooLongCases,
  MATCH_CASES,
  PARSE_CASES,
  PATH_CASES,
  TOKEN_CASES,
  type MatchCase,
} from './robots-google-cases.js';

/**
 * Cases of Google's parser where the judge's matcher answers otherwise on purpose, keyed by
 * `TEST:line` of robots_test.cc, with the reason. Everything else must agree.
 */
const DIVERGENCES: Record<string, string> = {
  'ID_LineSyntax_Line:79':
    'Google reads "disallow /" (no colon) as a rule; RFC 9309 §2.2 requires the colon, so a crawler that ignores the line is not to blame',
  'ID_Encoding:419':
    'Google leaves encoding the URL to its caller; RFC 9309 §2.2.2 compares both sides percent-encoded, so /foo/bar/ツ matches a rule for ツ',
  'ID_Encoding:430': 'as ID_Encoding:419: the raw ツ in the URL is percent-encoded before the comparison',
  'GoogleOnly_IndexHTMLisDirectory:505':
    'Google-only: "index.html" at the end of an allow also allows the directory; not in RFC 9309',
  'GoogleOnly_LineTooLong:539':
    'Google-only: lines are cut at 8 × 2083 bytes; RFC 9309 §2.5 asks for 500 KiB to be parsed and sets no line limit',
  'GoogleOnly_LineTooLong:565': 'as GoogleOnly_LineTooLong:539',
};

const MATCHES = [...MATCH_CASES, ...lineTooLongCases()];
const key = (c: { test: string; line: number }): string => `${c.test}:${c.line}`;

function answer(c: MatchCase): boolean {
  return RobotsTxt.parse(c.robotstxt).isAllowed(c.userAgent, robotsPathOf(c.url));
}

describe("the judge's robots.txt matcher on Google's robots.txt test cases", () => {
  test('every allow/disallow case agrees with Google, but the listed divergences, which disagree', () => {
    const wrong: string[] = [];
    for (const c of MATCHES) {
      const diverges = Object.hasOwn(DIVERGENCES, key(c));
      if ((answer(c) === c.allowed) === diverges)
        wrong.push(`${key(c)} ${c.userAgent} ${c.url.slice(0, 80)}: expected ${diverges ? 'a divergence' : c.allowed}`);
    }
    assert.deepEqual(wrong, []);
    assert.equal(MATCHES.length, 145);
  });

  test('product tokens are valid exactly as Google judges them', () => {
    for (const c of TOKEN_CASES) assert.equal(isValidProductToken(c.productToken), c.valid, key(c));
  });

  test('the path of a URL is taken as Google takes it', () => {
    for (const c of PATH_CASES) assert.equal(robotsPathOf(c.url), c.expected, key(c));
  });

  test('patterns are percent-encoded as Google encodes them', () => {
    for (const c of ESCAPE_CASES) assert.equal(normalizePattern(c.pattern), c.expected, key(c));
  });

  test('directives, unknown lines, line numbers and Sitemap values are read as Google reads them', () => {
    for (const c of PARSE_CASES) {
      const body = c.hex !== undefined ? Buffer.from(c.hex, 'hex') : c.text!;
      const records = RobotsTxt.parse(body).records;
      const known = records.filter((r) => r.key !== 'other' && r.key !== 'crawl-delay');
      if (c.validDirectives !== undefined) assert.equal(known.length, c.validDirectives, key(c));
      if (c.unknownDirectives !== undefined) assert.equal(records.length - known.length, c.unknownDirectives, key(c));
      if (c.lastLineSeen !== undefined) assert.equal(records.at(-1)?.line, c.lastLineSeen, key(c));
      if (c.sitemap !== undefined) assert.equal(records.find((r) => r.key === 'sitemap')?.value, c.sitemap, key(c));
    }
  });
});

describe("the judge's robots.txt matcher beyond Google's cases", () => {
  test('only the first 500 KiB are read, as the crawler reads them', () => {
    const filler = `# ${'x'.repeat(ROBOTS_MAX_BYTES)}\n`;
    const late = RobotsTxt.parse(`User-agent: *\n${filler}Disallow: /late/\n`);
    assert.equal(late.isAllowed('crawlstream', '/late/a'), true);
    const cut = RobotsTxt.parse(`User-agent: *\nDisallow: /${'a'.repeat(ROBOTS_MAX_BYTES)}`);
    assert.equal(cut.records.at(-1)!.value.length < ROBOTS_MAX_BYTES, true);
  });

  test("Crawl-delay is read from the crawler's group, else the * group, in ms", () => {
    const r = RobotsTxt.parse(
      'User-agent: *\nCrawl-delay: 2\n\nUser-agent: crawlstream\nCrawl-delay: 0.5\nDisallow:\n',
    );
    assert.equal(r.crawlDelayMs('crawlstream'), 500);
    assert.equal(r.crawlDelayMs('other'), 2000);
    assert.equal(RobotsTxt.parse('User-agent: *\nCrawl-delay: soon\n').crawlDelayMs('x'), 0);
  });

  test('a $ that does not end the pattern is an ordinary character', () => {
    const r = RobotsTxt.parse('User-agent: *\nDisallow: /a$b\n');
    assert.equal(r.isAllowed('x', '/a$b/c'), false);
    assert.equal(r.isAllowed('x', '/a'), true);
  });
});
