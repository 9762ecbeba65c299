import { parentPort } from 'node:worker_threads';
import { analyzeHtml } from './html-analysis.js';
import { toTransferredRecords, type WorkerAnswer, type WorkerRequest } from './parse-pool.js';
import { deflatePayload } from './warc-records.js';
import { prebuildRequestResponse } from './warc-response.js';

/**
 * A parse worker's thread (see ParsePool): answers each WorkerRequest with `{ id, analysis,
 * deflated, prebuilt }` (`deflated` only with a `deflateLevel`, `prebuilt` only with a `prebuild`),
 * or `{ id, error }` when analysis threw. Holds no state between messages.
 */
parentPort!.on('message', (msg: WorkerRequest) => {
  const req = { ...msg.req, body: Buffer.from(msg.req.body.buffer, msg.req.body.byteOffset, msg.req.body.byteLength) };
  try {
    const analysis = analyzeHtml(req);
    const answer: WorkerAnswer = { id: msg.id, analysis };
    if (msg.deflateLevel === undefined && msg.prebuild === undefined) return parentPort!.postMessage(answer);
    const moved: ArrayBuffer[] = [];
    const d = msg.deflateLevel === undefined ? undefined : deflatePayload(req.body, msg.deflateLevel);
    if (d !== undefined) {
      // moved, not cloned: a buffer of its own (zlib's may be a view of a larger one)
      const deflated = new Uint8Array(d.byteLength);
      deflated.set(d);
      answer.deflated = deflated;
      moved.push(deflated.buffer);
    }
    if (msg.prebuild !== undefined) {
      answer.prebuilt = toTransferredRecords(prebuildRequestResponse(msg.prebuild, req.body, d));
      moved.push(answer.prebuilt.members.buffer as ArrayBuffer);
    }
    parentPort!.postMessage(answer, moved);
  } catch (err) {
    parentPort!.postMessage({ id: msg.id, error: err instanceof Error ? err.message : String(err) });
  }
});
