import { M } from '../../core/metric-catalogue.js';
import { bufferSerde } from '../../core/serde.js';
import { taskIdString } from '../../core/ids.js';
import type { ProcessorContext, Cancellable } from '../../runtime/processor.js';
import type { KeyValueStore } from '../../state/state-store.js';
import { keyValueStore, type StoreBuilder } from '../../state/store-builder.js';
import type { WarcStoreTarget } from '../common/warc-store-target.js';
import { s3ObjectStore, type ObjectStore } from './object-store.js';
import { WarcUploader, type UploadedFile } from './warc-uploader.js';
import type { WarcStore } from './warc-store.js';

/**
 * The upload ledger: WARC file name → JSON of the verified object(s) (`key`, `size`, `etag`,
 * `index`, `uploadedAt`). Changelogged, so on either engine a restarted or moved task knows
 * which of its files the store already holds, and neither uploads nor keeps them again.
 */
export const UPLOADS_STORE = 'parser-uploads';

export function uploadsStore(): StoreBuilder {
  return keyValueStore(UPLOADS_STORE, bufferSerde, bufferSerde);
}

/** A file that got no record for this long is closed, so an idle crawl's last records reach the store. */
export const QUIET_CLOSE_MS = 3_000;
const TICK_MS = 500;

/**
 * Ships one parser task's WARC files to `--warc-store`: every file the writer closes, and every
 * closed file an earlier run left in the directory (incl. those `open()` recovered after a
 * crash), goes to the WarcUploader; each verified upload is recorded in the ledger and its local
 * copies are deleted (unless kept). A punctuator does the ledger's writes, so they commit like
 * any other state change of the task.
 */
export class WarcShipping {
  private readonly uploader: WarcUploader;
  private readonly ledger: KeyValueStore<Buffer, Buffer>;
  private readonly tick: Cancellable;

  constructor(
    private readonly context: ProcessorContext,
    private readonly warc: WarcStore,
    target: WarcStoreTarget,
    store: ObjectStore = s3ObjectStore(target),
  ) {
    this.ledger = context.getStateStore<KeyValueStore<Buffer, Buffer>>(UPLOADS_STORE);
    this.uploader = new WarcUploader({
      dir: warc.writer.dir,
      target,
      store,
      owns: (name) => warc.ownsClosedFile(name),
      uploaded: (name) => this.ledger.get(Buffer.from(name)) !== undefined,
      metrics: context.metrics,
      owner: taskIdString(context.taskId),
      log: context.log,
    });
    warc.onFileClosed = (name) => this.uploader.enqueue(name);
    void this.uploader
      .scan()
      .catch((err: unknown) =>
        context.log.error('listing the WARC directory for uploads failed', { error: String(err) }),
      );
    this.tick = context.schedule(TICK_MS, (now) => this.punctuate(now));
  }

  /** True when no file is open and every closed file is uploaded, recorded and removed. */
  isIdle(): boolean {
    return this.warc.writer.openFileQuietMs(Date.now()) === undefined && this.uploader.pending === 0;
  }

  close(): void {
    this.tick.cancel();
    this.warc.onFileClosed = undefined;
    this.uploader.stop();
  }

  private punctuate(now: number): void {
    const quiet = this.warc.writer.openFileQuietMs(now);
    if (quiet !== undefined && quiet >= QUIET_CLOSE_MS) this.warc.writer.closeFile();
    const uploaded = this.uploader.takeUploaded();
    for (const file of uploaded) this.record(file, now);
    // a local copy may go before the ledger's next commit: the store holds it, verified, and an
    // entry lost to a crash only means a file that is no longer there is not looked for
    for (const file of uploaded) this.uploader.removeLocal(file);
    this.context.metrics.setGauge(M.warcUploadPending, taskIdString(this.context.taskId), this.uploader.pending);
  }

  private record(file: UploadedFile, now: number): void {
    const key = Buffer.from(file.name);
    if (this.ledger.get(key) !== undefined) return;
    const entry = {
      key: file.warc.key,
      size: file.warc.size,
      etag: file.warc.etag,
      ...(file.index !== undefined ? { index: file.index.key, indexEtag: file.index.etag } : {}),
      uploadedAt: now,
    };
    this.ledger.put(key, Buffer.from(JSON.stringify(entry)));
  }
}
