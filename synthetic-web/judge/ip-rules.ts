import type { RequestLogEntry } from '../request-log.js';
import { byStart, ms, type Flag, type JudgeOptions } from './types.js';

/**
 * The per-address rules, over the requests of hosts `ipOf` maps to an address:
 * - ip-concurrency: a request starts while `ipConcurrency` others on its address are still open
 *   (one that ended exactly at its start is not);
 * - ip-gap: a request starts less than `ipGapMs` after the previous start on its address, even
 *   if that start was stamped as late as its `startSlack` allows (a stalled web stamps late; only
 *   what the log proves is flagged), and its own `startSlack` does not allow it to have started a
 *   full gap before that one instead (a request that waited out a stall, or an accept, can be
 *   stamped after one the crawler sent later: a Kafka run had such a pair stamped 7 ms apart, sent
 *   163 ms apart the other way round).
 * The crawler's limits hold for the whole crawl, its frontier partitions together: judge it
 * with its own `--ip-concurrency` and `--ip-gap`.
 */
export function judgeIps(log: readonly RequestLogEntry[], o: JudgeOptions, flag: Flag): void {
  const ipOf = o.ipOf;
  if (ipOf === undefined) return;
  const byIp = new Map<string, RequestLogEntry[]>();
  for (const e of log) {
    const ip = ipOf(e.host);
    if (ip === undefined) continue;
    let list = byIp.get(ip);
    if (list === undefined) byIp.set(ip, (list = []));
    list.push(e);
  }
  for (const [ip, list] of byIp) {
    list.sort(byStart);
    let open: RequestLogEntry[] = [];
    let previous: RequestLogEntry | undefined;
    for (const e of list) {
      open = open.filter((x) => x.end > e.start);
      if (open.length >= o.ipConcurrency)
        flag(
          'ip-concurrency',
          e,
          `started while ${open.length} requests on ${ip} were open (#${open.map((x) => x.seq).join(', #')}); at most ${o.ipConcurrency}`,
        );
      const slack = previous?.startSlack ?? 0;
      const apart = previous === undefined ? Infinity : e.start - previous.start;
      // how far before the previous start this one may really have been, stamped that late
      const before = (e.startSlack ?? 0) - apart;
      if (previous !== undefined && apart + slack < o.ipGapMs && before < o.ipGapMs)
        flag(
          'ip-gap',
          e,
          `started ${ms(apart)} after #${previous.seq} (${previous.host}) on ${ip}${slack > 0 ? ` (stamped up to ${ms(slack)} late)` : ''}; needs ${ms(o.ipGapMs)}`,
        );
      open.push(e);
      previous = e;
    }
  }
}
