import { existsSync, unlinkSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { M } from '../../core/metric-catalogue.js';
import type { Metrics } from '../../core/metrics.js';
import type { Logger } from '../../core/logger.js';
import { objectKey, type WarcStoreTarget } from '../common/warc-store-target.js';
import type { ObjectStore, StoredObject } from './object-store.js';

/** The CDXJ index written beside a WARC file, when there is one: `<base>.warc.gz` → `<base>.cdxj`. */
export function indexNameOf(warcName: string): string {
  return warcName.replace(/\.warc\.gz$/, '') + '.cdxj';
}

/** A WARC file (and its index, when it had one) stored and verified, not yet in the ledger. */
export interface UploadedFile {
  readonly name: string;
  readonly warc: StoredObject;
  readonly index: StoredObject | undefined;
}

export interface WarcUploaderOptions {
  readonly dir: string;
  readonly target: WarcStoreTarget;
  readonly store: ObjectStore;
  /** Whether a name in `dir` is a closed WARC file of this uploader's partition. */
  readonly owns: (name: string) => boolean;
  /** Whether the ledger says a file was uploaded already. */
  readonly uploaded: (name: string) => boolean;
  readonly metrics: Metrics;
  /** Gauge owner: the task id. */
  readonly owner: string;
  readonly log: Logger;
  /** First and longest wait between attempts while the store fails. */
  readonly backoffMs?: number;
  readonly backoffMaxMs?: number;
}

/**
 * Uploads one parser task's closed WARC files, one at a time in the order they closed, each to
 * its deterministic key `PREFIX/NAME` and its CDXJ index beside it, and hands each verified upload
 * to `takeUploaded()`. The caller records it in the ledger and then deletes the local copies
 * (`removeLocal`), so a file leaves the disk only once the store holds it, verified.
 *
 * Exactly once: a key is always written with the same bytes, so a retry, or an upload repeated
 * after a crash between the upload and the ledger's commit, leaves one object. While the store
 * fails, attempts back off (doubling up to `backoffMaxMs`), the files wait on disk, and the
 * `warc_store_unreachable` gauge is 1; nothing is ever dropped.
 */
export class WarcUploader {
  private readonly queue: string[] = [];
  private readonly queued = new Set<string>();
  private readonly done: UploadedFile[] = [];
  private running = false;
  private stopped = false;
  private wake: (() => void) | undefined;
  private readonly backoffMs: number;
  private readonly backoffMaxMs: number;

  constructor(private readonly o: WarcUploaderOptions) {
    this.backoffMs = o.backoffMs ?? 1_000;
    this.backoffMaxMs = o.backoffMaxMs ?? 30_000;
  }

  /** Queues the closed files of this partition already in the directory (left by an earlier run). */
  async scan(): Promise<void> {
    const names = (await readdir(this.o.dir)).filter((n) => this.o.owns(n)).sort();
    for (const name of names) this.enqueue(name);
  }

  /** Queues a closed WARC file; a file queued, or recorded in the ledger, is not uploaded again. */
  enqueue(name: string): void {
    if (this.stopped || this.queued.has(name)) return;
    if (this.o.uploaded(name)) {
      // uploaded before a crash or a stop, but still on disk: only the local copy is left to remove
      this.done.push({ name, warc: { key: objectKey(this.o.target, name), size: -1, etag: '' }, index: undefined });
      this.queued.add(name);
      return;
    }
    this.queued.add(name);
    this.queue.push(name);
    this.gauge();
    if (!this.running) void this.run();
  }

  /** Verified uploads since the last call, in upload order. */
  takeUploaded(): UploadedFile[] {
    return this.done.splice(0);
  }

  /** Deletes a file's local copies once the ledger holds it (unless the files are kept). */
  removeLocal(file: UploadedFile): void {
    this.queued.delete(file.name);
    if (this.o.target.keepLocal) return;
    for (const name of [file.name, indexNameOf(file.name)]) {
      try {
        unlinkSync(join(this.o.dir, name));
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      }
    }
  }

  /** Files closed and not yet uploaded, recorded and removed. */
  get pending(): number {
    return this.queued.size;
  }

  /** Stops after the upload in flight; files not uploaded stay on disk for the next run. */
  stop(): void {
    this.stopped = true;
    this.wake?.();
    this.o.store.close();
  }

  private async run(): Promise<void> {
    this.running = true;
    let wait = this.backoffMs;
    try {
      while (!this.stopped && this.queue.length > 0) {
        const name = this.queue[0]!;
        // an index written by the same close is on disk once the close's synchronous work is done
        await new Promise((r) => setImmediate(r));
        try {
          const uploaded = await this.uploadOne(name);
          if (this.stopped) return;
          this.queue.shift();
          if (uploaded !== undefined) this.done.push(uploaded);
          else this.queued.delete(name);
          this.o.metrics.inc(M.warcUploads, 1, 'uploaded');
          this.o.metrics.setGauge(M.warcStoreUnreachable, this.o.owner, 0);
          wait = this.backoffMs;
        } catch (err) {
          if (this.stopped) return;
          this.o.metrics.inc(M.warcUploads, 1, 'failed');
          this.o.metrics.setGauge(M.warcStoreUnreachable, this.o.owner, 1);
          this.o.log.warn('WARC upload failed; retrying', {
            file: name,
            retryInMs: wait,
            error: (err as Error).message,
          });
          await this.sleep(wait);
          wait = Math.min(wait * 2, this.backoffMaxMs);
        }
        this.gauge();
      }
    } finally {
      this.running = false;
    }
  }

  /** Uploads a file and its index; undefined when the file is gone (removed by an earlier run). */
  private async uploadOne(name: string): Promise<UploadedFile | undefined> {
    const path = join(this.o.dir, name);
    if (!existsSync(path)) return undefined;
    const warc = await this.o.store.upload(objectKey(this.o.target, name), path);
    const indexPath = join(this.o.dir, indexNameOf(name));
    const index = existsSync(indexPath)
      ? await this.o.store.upload(objectKey(this.o.target, indexNameOf(name)), indexPath)
      : undefined;
    return { name, warc, index };
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.wake = undefined;
        resolve();
      }, ms);
      this.wake = () => {
        clearTimeout(timer);
        this.wake = undefined;
        resolve();
      };
    });
  }

  private gauge(): void {
    this.o.metrics.setGauge(M.warcUploadPending, this.o.owner, this.queued.size);
  }
}
