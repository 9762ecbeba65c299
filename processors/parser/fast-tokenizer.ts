import { Tokenizer } from 'htmlparser2';

/**
 * htmlparser2's Tokenizer with its two character-at-a-time scans replaced by `String#indexOf`,
 * for `new Parser(handler, { Tokenizer: FastTokenizer })`. Tokens, text and entity decoding are
 * exactly those of the stock Tokenizer (test/processors/parser/fast-tokenizer.test.ts compares
 * the two on the test web and on hostile markup); only the time to find the next `<` differs.
 *
 * - In text, with entity decoding on, the stock Tokenizer runs its state switch for every
 *   character although only `<` and `&` do anything there; this one jumps to the next of them.
 *   Text is most of a page, so this halves the parse time of an article.
 * - `fastForwardTo` (scripts, styles, comments, attribute ends) finds its character with
 *   `indexOf` instead of a loop over `charCodeAt`.
 *
 * Both are overrides of methods htmlparser2 declares private, checked at load: if a version of
 * htmlparser2 renames them, `FAST_TOKENIZER_ACTIVE` is false and parsing falls back to the stock
 * Tokenizer, correct but slower (the test then fails, so the upgrade is noticed).
 */
export class FastTokenizer extends Tokenizer {
  /** Position in `nextAmpIn` of the next `&` at or after the last scan, or its length. */
  nextAmp = -1;
  nextAmpIn: string | undefined = undefined;
}

/** The Tokenizer state FastTokenizer reads and moves (htmlparser2 12.x). */
interface TokenizerInternals {
  buffer: string;
  index: number;
  offset: number;
  nextAmp: number;
  nextAmpIn: string | undefined;
}

type StateFn = (this: TokenizerInternals, c: number) => void;
type FastForwardFn = (this: TokenizerInternals, c: number) => boolean;

const LT = 0x3c;
const AMP = 0x26;

/** Whether FastTokenizer's overrides are in place (htmlparser2 has the methods they replace). */
export const FAST_TOKENIZER_ACTIVE = install();

function install(): boolean {
  const proto = Tokenizer.prototype as unknown as { stateText?: StateFn; fastForwardTo?: FastForwardFn };
  const stockStateText = proto.stateText;
  if (typeof stockStateText !== 'function' || typeof proto.fastForwardTo !== 'function') return false;

  function stateText(this: TokenizerInternals, c: number): void {
    if (c === LT || c === AMP) {
      stockStateText!.call(this, c);
      return;
    }
    const buffer = this.buffer;
    const from = this.index - this.offset + 1;
    let lt = buffer.indexOf('<', from);
    if (lt === -1) lt = buffer.length;
    // one scan for `&` per `&` found, not one per text run: most pages have few
    if (this.nextAmpIn !== buffer || this.nextAmp < from) {
      const amp = buffer.indexOf('&', from);
      this.nextAmp = amp === -1 ? buffer.length : amp;
      this.nextAmpIn = buffer;
    }
    // parse() increments the index after each state call, so stop one short of the character
    this.index = Math.min(lt, this.nextAmp) - 1 + this.offset;
  }

  function fastForwardTo(this: TokenizerInternals, c: number): boolean {
    const at = this.buffer.indexOf(String.fromCharCode(c), this.index - this.offset + 1);
    if (at !== -1) {
      this.index = at + this.offset;
      return true;
    }
    this.index = this.buffer.length + this.offset - 1;
    return false;
  }

  Object.defineProperty(FastTokenizer.prototype, 'stateText', { value: stateText, writable: true, configurable: true });
  Object.defineProperty(FastTokenizer.prototype, 'fastForwardTo', {
    value: fastForwardTo,
    writable: true,
    configurable: true,
  });
  return true;
}
