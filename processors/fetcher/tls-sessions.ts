import type { TLSSocket } from 'node:tls';

/**
 * Most TLS sessions one client keeps, one per server name: ~1–3 KB each (a session holds the
 * server's certificate), so at most ~4–12 MB per fetcher task. Twice the hosts a frontier
 * partition holds at once by default (`--host-slots` 1000): the hosts that come back soon.
 */
export const MAX_TLS_SESSIONS = 4_096;

/**
 * TLS sessions to resume, one per server name, the least recently used dropped first past `max`.
 * A resumed handshake skips the certificate chain (sent, verified, decoded for the host-name
 * check), the largest part of a client's handshake CPU. undici's own cache holds its sessions
 * through WeakRefs, so every garbage collection of a busy process empties it, and it keeps 100:
 * a crawl that comes back to thousands of hosts after their connections closed resumed none.
 *
 * Sessions are kept by server name (the host, never the address), as undici keys them; a server
 * that refuses a session just completes a full handshake and hands over a new one. Not shared
 * across processes; not thread-safe.
 */
export class TlsSessions {
  private readonly byName = new Map<string, Buffer>();
  /** Bytes held: the sessions and their names (for `crawlstream_cache_bytes{cache="tls-sessions"}`). */
  bytes = 0;

  constructor(private readonly max = MAX_TLS_SESSIONS) {}

  /** The session last handed over by `servername`, if kept. */
  get(servername: string): Buffer | undefined {
    const session = this.byName.get(servername);
    if (session !== undefined) {
      this.byName.delete(servername);
      this.byName.set(servername, session);
    }
    return session;
  }

  /** Keeps what `socket` (connected, handshake done) hands over for `servername`: TLS 1.3 tickets arrive after the handshake. */
  track(servername: string, socket: TLSSocket): void {
    if (socket.getProtocol() !== 'TLSv1.3') {
      const session = socket.getSession();
      if (session !== undefined) this.set(servername, session);
    }
    socket.on('session', (session: Buffer) => this.set(servername, session));
  }

  get size(): number {
    return this.byName.size;
  }

  private set(servername: string, session: Buffer): void {
    this.forget(servername);
    this.byName.set(servername, session);
    this.bytes += session.length + 2 * servername.length;
    if (this.byName.size > this.max) this.forget(this.byName.keys().next().value!);
  }

  private forget(servername: string): void {
    const session = this.byName.get(servername);
    if (session === undefined) return;
    this.byName.delete(servername);
    this.bytes -= session.length + 2 * servername.length;
  }
}
