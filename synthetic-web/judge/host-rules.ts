import type { RequestLogEntry } from '../request-log.js';
import type { Controls } from './controls.js';
import { retryAfterUntil } from './retry-after.js';
import type { RobotsAnswers } from './robots-answers.js';
import { ms, schemeOf, type Flag, type JudgeOptions, type ViolationKind } from './types.js';

/** A time before which no request to the host may start, and why. */
interface Wait {
  until: number;
  kind: ViolationKind;
  seq: number;
  why: string;
  /** The wait holds only the robots.txt requests of this origin. */
  robotsOf?: string;
}

/**
 * Judges one host's requests, in start order, by every per-host rule; returns the smallest gap
 * (start − end of the request that ended last before it), null below two requests.
 */
export function judgeHost(
  host: string,
  entries: readonly RequestLogEntry[],
  answers: RobotsAnswers,
  controls: Controls,
  o: JudgeOptions,
  flag: Flag,
): number | null {
  let minGap: number | null = null;
  let prev: RequestLogEntry | undefined; // the earlier request that ended last
  const waits: Wait[] = [];
  let backoffStreak = 0;
  let lastThrottleEnd = -Infinity;
  const robotsFailures = new Map<string, number>();

  for (const e of entries) {
    const origin = `${schemeOf(e)}://${host}`;
    const robots = answers.isRobotsRequest(e);
    if (!robots) judgeRobots(e, origin, answers, o, flag);
    else if (e.path === '/robots.txt') judgeRobotsRefetch(e, origin, answers, o, flag);

    const binding = controls.bindingAt(host, e.start);
    if (binding.blocked)
      flag(
        'control-blocked',
        e,
        `${e.path} requested after BLOCK of ${binding.blocked.site} at ${iso(binding.blocked.at)}`,
      );
    if (binding.paused)
      flag(
        'control-paused',
        e,
        `${e.path} requested after PAUSE of ${binding.paused.site} at ${iso(binding.paused.at)}`,
      );

    if (prev !== undefined) {
      const gap = e.start - prev.end;
      minGap = minGap === null ? gap : Math.min(minGap, gap);
      const needed = Math.max(
        o.minGapMs,
        o.slowFactor * (prev.end - prev.start),
        crawlDelayMs(host, e.start, answers, o),
      );
      const slowGap = binding.slow?.minGapMs ?? 0;
      if (gap < 0) flag('overlap', e, `started ${ms(-gap)} before #${prev.seq} ended`);
      else if (gap < needed) flag('gap', e, `${ms(gap)} after #${prev.seq} ended; needs ${ms(needed)}`);
      else if (gap < slowGap)
        flag(
          'control-slow',
          e,
          `${ms(gap)} after #${prev.seq} ended; SLOW of ${binding.slow!.site} needs ${ms(slowGap)}`,
        );
    }
    for (const w of waits)
      if (e.start < w.until && (w.robotsOf === undefined || (w.robotsOf === origin && e.path === '/robots.txt')))
        flag(w.kind, e, `started ${ms(w.until - e.start)} before ${w.why} of #${w.seq} expired`);

    // what this response asks of the host's later requests
    const throttled = e.status === 429 || e.status === 503;
    const retryUntil = throttled ? retryAfterUntil(e, o.backoffMaxMs) : undefined;
    if (retryUntil !== undefined)
      waits.push({ until: retryUntil, kind: 'retry-after', seq: e.seq, why: 'Retry-After' });
    if (throttled && !robots) {
      if (e.end - lastThrottleEnd > o.backoffQuietMs) backoffStreak = 0;
      lastThrottleEnd = e.end;
      if (retryUntil === undefined) {
        backoffStreak++;
        const wait = Math.min(o.backoffMs * 2 ** (backoffStreak - 1), o.backoffMaxMs);
        waits.push({
          until: e.end + wait,
          kind: 'backoff',
          seq: e.seq,
          why: `the ${ms(wait)} back-off after ${e.status}`,
        });
      }
    }
    if (e.path === '/robots.txt') {
      if (e.status === 0 || e.status === 429 || e.status >= 500) {
        const failures = (robotsFailures.get(origin) ?? 0) + 1;
        robotsFailures.set(origin, failures);
        const wait = Math.min(o.robotsRetryMs * 2 ** (failures - 1), o.backoffMaxMs);
        const why = `the ${ms(wait)} robots.txt retry wait after ${e.status}`;
        waits.push({ until: e.end + wait, kind: 'robots-retry', seq: e.seq, why, robotsOf: origin });
      } else robotsFailures.delete(origin);
    }
    if (prev === undefined || e.end >= prev.end) prev = e;
  }
  return minGap;
}

/** robots.txt first, fresh, available, and obeyed for a request that is not itself a robots.txt request. */
function judgeRobots(e: RequestLogEntry, origin: string, answers: RobotsAnswers, o: JudgeOptions, flag: Flag): void {
  const answer = answers.latest(origin, e.start);
  if (answer === undefined) {
    flag('robots-not-first', e, `${e.method} ${e.path} before any robots.txt answer of ${origin}`);
    return;
  }
  if (answer.verdict === 'unavailable') {
    flag(
      'robots-unavailable-fetched',
      e,
      `${e.path} requested while robots.txt of ${origin} is unavailable (${answer.status})`,
    );
    return;
  }
  if (e.start > answer.at + o.robotsTtlMs)
    flag(
      'robots-expired',
      e,
      `${e.path} requested ${ms(e.start - answer.at)} after the robots.txt answer #${answer.seq} of ${origin}`,
    );
  if (answer.rules !== undefined && !answer.rules.isAllowed(o.userAgent, e.path))
    flag('disallowed-fetched', e, `${e.path} is disallowed by robots.txt of ${origin}`);
}

/**
 * A robots.txt request while the origin's latest answer is still good: it was available (rules or
 * allow-all) and its lifetime, counted from the start of the request that asked (the earliest a
 * crawler can date it by), has not run out, and no kill of the crawler may have lost it before a
 * commit (`crashes`). An unavailable answer is retried (robots-retry). A
 * robots.txt that another origin's robots.txt redirects to is not judged: the log cannot tell
 * which origin a request there asked for.
 */
function judgeRobotsRefetch(
  e: RequestLogEntry,
  origin: string,
  answers: RobotsAnswers,
  o: JudgeOptions,
  flag: Flag,
): void {
  const answer = answers.latest(origin, e.start);
  if (answer === undefined || answer.verdict === 'unavailable' || answers.mayBeChainHop(e)) return;
  // a kill while the answer was still on its way to a commit may have lost it
  if (o.crashes.some((k) => k >= answer.askedAt && k <= answer.at + o.crashGraceMs && k <= e.start)) return;
  if (e.start < answer.askedAt + o.robotsTtlMs)
    flag(
      'robots-refetched',
      e,
      `robots.txt of ${origin} requested again ${ms(e.start - answer.askedAt)} after #${answer.seq} asked; its answer is good for ${ms(o.robotsTtlMs)}`,
    );
}

/** The host's Crawl-delay at `t`: the largest of its origins' latest answers, capped at maxCrawlDelayMs. */
function crawlDelayMs(host: string, t: number, answers: RobotsAnswers, o: JudgeOptions): number {
  let delay = 0;
  for (const scheme of ['http', 'https']) {
    const known = answers.answersBy(`${scheme}://${host}`, t).filter((a) => a.verdict !== 'unavailable');
    const rules = known.at(-1)?.rules;
    if (rules !== undefined) delay = Math.max(delay, rules.crawlDelayMs(o.userAgent));
  }
  return Math.min(delay, o.maxCrawlDelayMs);
}

function iso(t: number): string {
  return new Date(t).toISOString();
}
