import { parentPort } from 'node:worker_threads';
import { analyzeHtml, type AnalysisRequest } from './html-analysis.js';
import type { WorkerAnswer } from './parse-pool.js';
import { deflatePayload } from './warc-records.js';

/**
 * A parse worker's thread (see ParsePool): answers each `{ id, req, deflateLevel }` with
 * `{ id, analysis, deflated }` (`deflated` only with a `deflateLevel`), or `{ id, error }` when
 * analysis threw. Holds no state between messages.
 */
parentPort!.on('message', (msg: { id: number; req: AnalysisRequest; deflateLevel?: number }) => {
  const req = { ...msg.req, body: Buffer.from(msg.req.body.buffer, msg.req.body.byteOffset, msg.req.body.byteLength) };
  try {
    const analysis = analyzeHtml(req);
    const answer: WorkerAnswer = { id: msg.id, analysis };
    if (msg.deflateLevel === undefined) return parentPort!.postMessage(answer);
    // moved, not cloned: a buffer of its own (zlib's may be a view of a larger one)
    const d = deflatePayload(req.body, msg.deflateLevel);
    const deflated = new Uint8Array(d.byteLength);
    deflated.set(d);
    parentPort!.postMessage({ ...answer, deflated }, [deflated.buffer]);
  } catch (err) {
    parentPort!.postMessage({ id: msg.id, error: err instanceof Error ? err.message : String(err) });
  }
});
