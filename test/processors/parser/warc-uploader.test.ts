import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CrawlError } from '../../../core/errors.js';
import { M } from '../../../core/metric-catalogue.js';
import { Metrics } from '../../../core/metrics.js';
import { silentLogger } from '../../../core/logger.js';
import type { ObjectStore, StoredObject } from '../../../processors/parser/object-store.js';
import { WarcUploader, indexNameOf, type UploadedFile } from '../../../processors/parser/warc-uploader.js';
import type { WarcStoreTarget } from '../../../processors/common/warc-store-target.js';

// the uploader's own logic (order, back-off, nothing dropped, local copies removed last) is under
// test here; the store is a stand-in that fails on demand. SeaweedFS stands behind the e2e tests.
class FlakyStore implements ObjectStore {
  down = true;
  readonly keys: string[] = [];
  attempts = 0;
  async upload(key: string): Promise<StoredObject> {
    this.attempts++;
    await Promise.resolve();
    if (this.down) throw new CrawlError('CS_OBJECT_STORE', `connect ECONNREFUSED for ${key}`);
    this.keys.push(key);
    return { key, size: 1, etag: 'e' };
  }
  close(): void {}
}

const target = (keepLocal = false): WarcStoreTarget => ({
  bucket: 'b',
  prefix: 'p',
  endpoint: null,
  region: 'us-east-1',
  pathStyle: true,
  keepLocal,
});

async function until(what: string, ok: () => boolean): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!ok()) {
    assert.ok(Date.now() < deadline, `timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

function setup(keepLocal = false, ledger = new Set<string>()) {
  const dir = mkdtempSync(join(tmpdir(), 'uploader-'));
  const store = new FlakyStore();
  const metrics = new Metrics();
  const uploader = new WarcUploader({
    dir,
    target: target(keepLocal),
    store,
    owns: (n) => n.endsWith('.warc.gz'),
    uploaded: (n) => ledger.has(n),
    metrics,
    owner: 'parser-0',
    log: silentLogger,
    backoffMs: 5,
    backoffMaxMs: 20,
  });
  return { dir, store, metrics, uploader };
}

test('while the store is down files wait on disk and the unreachable gauge is 1; once it is back each file and its index are uploaded once', async () => {
  const { dir, store, metrics, uploader } = setup();
  try {
    writeFileSync(join(dir, 'a.warc.gz'), 'A');
    writeFileSync(join(dir, indexNameOf('a.warc.gz')), 'index of a');
    writeFileSync(join(dir, 'b.warc.gz'), 'B');
    writeFileSync(join(dir, 'other.txt'), 'not ours');
    await uploader.scan();
    await until('a few attempts failed', () => store.attempts >= 3);
    assert.equal(metrics.gauge(M.warcStoreUnreachable), 1);
    assert.equal(metrics.gauge(M.warcUploadPending), 2);
    assert.deepEqual(uploader.takeUploaded(), []);
    assert.deepEqual(readdirSync(dir).sort(), ['a.cdxj', 'a.warc.gz', 'b.warc.gz', 'other.txt']);

    store.down = false;
    const done: UploadedFile[] = [];
    await until('both files are uploaded', () => (done.push(...uploader.takeUploaded()), done.length === 2));
    assert.deepEqual(store.keys, ['p/a.warc.gz', 'p/a.cdxj', 'p/b.warc.gz']);
    assert.equal(metrics.gauge(M.warcStoreUnreachable), 0);
    assert.ok(metrics.counter(M.warcUploads, 'failed') >= 3);
    assert.equal(metrics.counter(M.warcUploads, 'uploaded'), 2);
    assert.equal(done[0]!.index?.key, 'p/a.cdxj');
    // queued again before removal (a close announcing a file twice): still one upload
    uploader.enqueue('a.warc.gz');
    for (const f of done) uploader.removeLocal(f);
    assert.deepEqual(readdirSync(dir), ['other.txt']);
    assert.equal(uploader.pending, 0);
    assert.deepEqual(store.keys, ['p/a.warc.gz', 'p/a.cdxj', 'p/b.warc.gz']);
  } finally {
    uploader.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a file the ledger holds is not uploaded again, only removed; --warc-keep-local keeps every copy', async () => {
  const ledger = new Set(['a.warc.gz']);
  const { dir, store, uploader } = setup(false, ledger);
  try {
    store.down = false;
    writeFileSync(join(dir, 'a.warc.gz'), 'A');
    await uploader.scan();
    const [file] = uploader.takeUploaded();
    assert.equal(file?.name, 'a.warc.gz');
    uploader.removeLocal(file!);
    assert.equal(existsSync(join(dir, 'a.warc.gz')), false);
    assert.equal(store.attempts, 0);
  } finally {
    uploader.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  const kept = setup(true);
  try {
    kept.store.down = false;
    writeFileSync(join(kept.dir, 'c.warc.gz'), 'C');
    kept.uploader.enqueue('c.warc.gz');
    const done: UploadedFile[] = [];
    await until('c is uploaded', () => (done.push(...kept.uploader.takeUploaded()), done.length === 1));
    kept.uploader.removeLocal(done[0]!);
    assert.deepEqual(readdirSync(kept.dir), ['c.warc.gz']);
    assert.deepEqual(kept.store.keys, ['p/c.warc.gz']);
  } finally {
    kept.uploader.stop();
    rmSync(kept.dir, { recursive: true, force: true });
  }
});
