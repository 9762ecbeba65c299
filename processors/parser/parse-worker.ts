import { parentPort } from 'node:worker_threads';
import { analyzeHtml, type AnalysisRequest } from './html-analysis.js';

/**
 * A parse worker's thread (see ParsePool): answers each `{ id, req }` with `{ id, analysis }`, or
 * `{ id, error }` when analysis threw. Holds no state between messages.
 */
parentPort!.on('message', (msg: { id: number; req: AnalysisRequest }) => {
  const req = { ...msg.req, body: Buffer.from(msg.req.body.buffer, msg.req.body.byteOffset, msg.req.body.byteLength) };
  try {
    const analysis = analyzeHtml(req);
    parentPort!.postMessage({ id: msg.id, analysis });
  } catch (err) {
    parentPort!.postMessage({ id: msg.id, error: err instanceof Error ? err.message : String(err) });
  }
});
