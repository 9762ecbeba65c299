import type { Socket } from 'node:net';
import type { ServerResponse } from 'node:http';
import type { Scheme } from './origins.js';

/** The most plaintext one TLS record carries (RFC 8446 §5.1). */
const TLS_RECORD_BYTES = 16_384;

/** A libuv stream handle, as Node's sockets keep it: the bytes it holds that the kernel has not taken. */
interface StreamHandle {
  readonly writeQueueSize?: number;
}

/**
 * Whether every byte written to `socket` so far is with the kernel, or undefined when this Node does
 * not show it. A TCP handle holds what the kernel has not taken; a TLS socket's own handle counts its
 * writes until their completion, which Node reports a tick later even when the encrypted bytes all
 * went out at once (a 24 KiB reply: a client had it 3.5 ms after the write while the server, busy for
 * 150 ms, logged 'finish' 157 ms after it), so over TLS the TCP connection under it (`_parent`) is
 * asked. Holds for a reply written in one call on a connection with no write of its own still in
 * progress (no pipelining): a TLS socket then encrypts and hands down all of it at once.
 */
function withKernel(socket: Socket | null): boolean | undefined {
  if (socket === null) return undefined;
  const tls = socket as Socket & { encrypted?: boolean; _parent?: { _handle?: StreamHandle | null } | null };
  const handle = tls.encrypted === true ? tls._parent?._handle : (socket as { _handle?: StreamHandle | null })._handle;
  const queued = handle?.writeQueueSize;
  return typeof queued === 'number' ? queued === 0 : undefined;
}

/**
 * Whether a reply just written in one `end()` was complete then: everything reached the kernel
 * within it, whenever this process gets to run its 'finish' callback (a client sees the reply
 * while this process is still busy). A reply the kernel did not take whole (a client not reading)
 * is complete at 'finish'. Where Node does not show the queue: over TLS a reply that fits one
 * record, as before the queue was asked.
 */
export function completeAtWrite(res: ServerResponse, scheme: Scheme): boolean {
  if (res.writableFinished) return true;
  const flushed = withKernel(res.socket);
  if (flushed !== undefined) return flushed;
  return scheme === 'https' && (res.socket?.writableLength ?? Infinity) <= TLS_RECORD_BYTES;
}
