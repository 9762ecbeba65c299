import { Worker } from 'node:worker_threads';
import { analyzeHtml, fromTransfer, type AnalysisRequest, type HtmlAnalysis } from './html-analysis.js';

/** A body made ready on a worker: its analysis, and its payload deflated for the WARC record when asked. */
export interface PreparedBody {
  analysis: HtmlAnalysis;
  /** `deflatePayload(body, deflateLevel)` (warc-records.ts); absent when not asked or answered on the main thread. */
  deflated?: Buffer;
}

/** A parse worker's answer: `analysis` (and `deflated` when asked), or `error` when analysis threw. */
export interface WorkerAnswer {
  id: number;
  analysis?: HtmlAnalysis;
  deflated?: Uint8Array;
  error?: string;
}

interface Pending {
  req: AnalysisRequest;
  resolve: (a: PreparedBody | undefined) => void;
}

interface Slot {
  worker: Worker;
  pending: Map<number, Pending>;
}

/**
 * Worker threads that analyse HTML bodies (`analyzeHtml`) off the main thread, and deflate their
 * payloads for the WARC record when asked, so the parser's heaviest pure work uses the machine's
 * other cores. One pool per process, shared by every parser
 * task (`acquire`/`release`); the main thread keeps every store, the log and every commit.
 *
 * Contract: `analyze` never rejects. It resolves to the prepared body, or to undefined when the worker
 * threw on this body (the caller then analyses on its own thread, where the same input throws
 * the same error and is dead-lettered as before). A worker that exits has its requests answered
 * on the main thread and is replaced; no request is lost.
 */
export class ParsePool {
  private static shared: { pool: ParsePool; users: number } | undefined;
  /** Analyses answered by a worker thread in this process, over every pool so far. */
  static answeredByWorkers = 0;

  /** The process's pool (made with `workers` threads on first use); `release()` once per call. */
  static acquire(workers: number): ParsePool {
    if (ParsePool.shared === undefined) ParsePool.shared = { pool: new ParsePool(workers), users: 0 };
    ParsePool.shared.users++;
    return ParsePool.shared.pool;
  }

  private readonly slots: Slot[] = [];
  private nextId = 0;
  private closed = false;

  private constructor(readonly size: number) {
    for (let i = 0; i < size; i++) this.slots.push(this.spawn());
  }

  /** Drops one `acquire`; the last one stops the workers (requests in flight are answered on this thread). */
  release(): void {
    const shared = ParsePool.shared;
    if (shared === undefined || shared.pool !== this) return;
    if (--shared.users > 0) return;
    ParsePool.shared = undefined;
    this.closed = true;
    for (const slot of this.slots) {
      this.answerInline(slot);
      void slot.worker.terminate();
    }
  }

  /** Requests sent and not yet answered, over all workers. */
  inFlight(): number {
    let n = 0;
    for (const s of this.slots) n += s.pending.size;
    return n;
  }

  /** Analyses `req.body`, and with `deflateLevel` deflates it too (see PreparedBody). */
  analyze(req: AnalysisRequest, deflateLevel?: number): Promise<PreparedBody | undefined> {
    if (this.closed) return Promise.resolve(inline(req));
    let slot = this.slots[0]!;
    for (const s of this.slots) if (s.pending.size < slot.pending.size) slot = s;
    const id = this.nextId++;
    // the body is copied into a buffer of its own and moved, not cloned with the (possibly much
    // larger) buffer it is a view of; the caller keeps its body for the WARC record
    const body = new Uint8Array(req.body.byteLength);
    body.set(req.body);
    return new Promise((resolve) => {
      if (slot.pending.size === 0) slot.worker.ref();
      slot.pending.set(id, { req, resolve });
      slot.worker.postMessage({ id, req: { ...req, body }, deflateLevel }, [body.buffer]);
    });
  }

  private spawn(): Slot {
    const worker = new Worker(new URL('./parse-worker.js', import.meta.url));
    const slot: Slot = { worker, pending: new Map() };
    worker.unref();
    worker.on('message', (msg: WorkerAnswer) => {
      const p = slot.pending.get(msg.id);
      if (p === undefined) return;
      slot.pending.delete(msg.id);
      if (slot.pending.size === 0) worker.unref();
      if (msg.analysis === undefined) return p.resolve(undefined);
      ParsePool.answeredByWorkers++;
      const d = msg.deflated;
      p.resolve({
        analysis: fromTransfer(msg.analysis),
        ...(d === undefined ? {} : { deflated: Buffer.from(d.buffer, d.byteOffset, d.byteLength) }),
      });
    });
    const lost = () => {
      this.answerInline(slot);
      const i = this.slots.indexOf(slot);
      if (!this.closed && i >= 0) this.slots[i] = this.spawn();
    };
    worker.once('error', lost);
    worker.once('exit', lost);
    return slot;
  }

  private answerInline(slot: Slot): void {
    const pending = [...slot.pending.values()];
    slot.pending.clear();
    for (const p of pending) p.resolve(inline(p.req));
  }
}

/**
 * The analysis made on this thread, or undefined when it throws (the caller repeats it and fails
 * there). Not deflated: the WARC writer deflates the payload itself when it has none.
 */
function inline(req: AnalysisRequest): PreparedBody | undefined {
  try {
    return { analysis: analyzeHtml(req) };
  } catch {
    return undefined;
  }
}
