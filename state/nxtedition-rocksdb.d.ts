declare module '@nxtedition/rocksdb' {
  /** The parts of the binding state/rocks.ts uses; everything else stays behind that port. */
  export class RocksLevel {
    constructor(location: string, options?: object);
    open(): Promise<void>;
    close(): Promise<void>;
    batch(): unknown;
  }
}
