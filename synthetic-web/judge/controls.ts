import type { ControlEvent } from './types.js';

/** What the operator's commands require of one host's request starting at some time. */
export interface Binding {
  /** The BLOCK in force (its event), if it binds. */
  blocked?: ControlEvent;
  paused?: ControlEvent;
  /** The SLOW in force, if it binds: gaps must be at least its minGapMs. */
  slow?: ControlEvent;
}

/**
 * Operator commands by site. A command is for every host of its site (the site itself and its
 * subdomains). BLOCK, PAUSE and SLOW bind the requests that start at or after their `at` plus
 * `graceMs`, until a RESUME; a RESUME frees requests starting at or after its own `at` (no grace:
 * stopping early is always polite). A later SLOW replaces an earlier one's gap.
 */
export class Controls {
  readonly #events: ControlEvent[];

  constructor(
    events: readonly ControlEvent[],
    private readonly graceMs: number,
  ) {
    this.#events = events.slice().sort((a, b) => a.at - b.at);
  }

  get empty(): boolean {
    return this.#events.length === 0;
  }

  /** The commands that bind a request of `host` starting at `t`. */
  bindingAt(host: string, t: number): Binding {
    let state: Binding = {};
    for (const e of this.#events) {
      if (e.at > t) break;
      if (host !== e.site && !host.endsWith(`.${e.site}`)) continue;
      switch (e.action) {
        case 'BLOCK':
          state = { ...state, blocked: state.blocked ?? e };
          break;
        case 'PAUSE':
          state = { ...state, paused: state.paused ?? e };
          break;
        case 'SLOW':
          state = { ...state, slow: e };
          break;
        case 'RESUME':
          state = {};
          break;
      }
    }
    const binds = (e: ControlEvent | undefined): ControlEvent | undefined =>
      e !== undefined && e.at + this.graceMs <= t ? e : undefined;
    const out: Binding = {};
    const blocked = binds(state.blocked);
    const paused = binds(state.paused);
    const slow = binds(state.slow);
    if (blocked) out.blocked = blocked;
    if (paused) out.paused = paused;
    if (slow && (slow.minGapMs ?? 0) > 0) out.slow = slow;
    return out;
  }
}
