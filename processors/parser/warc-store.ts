import { join } from 'node:path';
import type { StateStore } from '../../state/state-store.js';
import type { StoreBuilder } from '../../state/store-builder.js';
import { WarcWriter } from './warc-writer.js';
import { parseWarcFileName } from './warc-files.js';

export const WARC_STORE = 'warc';

/**
 * The parser's WARC output as a runtime-owned store: the runtime flushes it (fsync) before every
 * commit, so a page record never points at WARC bytes that a crash could lose.
 */
export class WarcStore implements StateStore {
  readonly name = WARC_STORE;
  /** Told each file's final name when the writer closes it (the WARC uploader sets it). */
  onFileClosed: ((name: string) => void) | undefined;
  constructor(readonly writer: WarcWriter) {}

  /** Whether `name` (in the writer's dir) is a closed WARC file of this store's writer. */
  ownsClosedFile(name: string): boolean {
    const parsed = parseWarcFileName(name, this.writer.prefix, this.writer.partition);
    return parsed !== undefined && !parsed.open;
  }

  flush(): void {
    this.writer.flush();
  }

  close(): void {
    this.writer.close();
  }
}

/**
 * One WARC writer per parser task, all writing into `dir` with the partition in the file names;
 * `gzipLevel` as in WarcWriterOptions.
 */
export function warcStore(dir: string, maxFileBytes: number, gzipLevel?: number): StoreBuilder<WarcStore> {
  return {
    name: WARC_STORE,
    changelog: false,
    // its WARC files are in `dir`, not the task's RocksDB: a corrupt RocksDB can still be restored
    inRocks: false,
    build: (context) => {
      let store: WarcStore | undefined;
      const writer = new WarcWriter({
        onFileClosed: (name) => store?.onFileClosed?.(name),
        dir: join(dir),
        partition: context.taskId.partition,
        maxFileBytes,
        software: 'crawlstream/0.1',
        cdxj: true,
        ...(gzipLevel !== undefined ? { gzipLevel } : {}),
      });
      writer.open();
      return (store = new WarcStore(writer));
    },
  };
}
