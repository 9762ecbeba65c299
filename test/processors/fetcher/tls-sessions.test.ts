import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { test } from 'node:test';
import type { TLSSocket } from 'node:tls';
import { TlsSessions } from '../../../processors/fetcher/tls-sessions.js';

/** A connected socket's TLS surface: its protocol, its TLS 1.2 session, and 'session' events (TLS 1.3 tickets). */
function socket(protocol: string, session?: Buffer): TLSSocket & EventEmitter {
  return Object.assign(new EventEmitter(), {
    getProtocol: () => protocol,
    getSession: () => session,
  }) as unknown as TLSSocket & EventEmitter;
}

test('TLS sessions: the newest per server name, the least recently used dropped past the bound', () => {
  const sessions = new TlsSessions(2);
  const a = socket('TLSv1.3');
  sessions.track('a.test', a);
  assert.equal(sessions.get('a.test'), undefined, 'a TLS 1.3 session arrives after the handshake');
  a.emit('session', Buffer.from('a1'));
  a.emit('session', Buffer.from('a2'));
  assert.equal(sessions.get('a.test')?.toString(), 'a2', 'the last ticket wins');
  sessions.track('b.test', socket('TLSv1.2', Buffer.from('b1')));
  assert.equal(sessions.get('b.test')?.toString(), 'b1', "TLS 1.2's session is there at the handshake");
  sessions.get('a.test'); // a used after b: b is now the least recent
  sessions.track('c.test', socket('TLSv1.2', Buffer.from('c1')));
  assert.equal(sessions.size, 2);
  assert.equal(sessions.get('b.test'), undefined, 'the least recently used went');
  assert.equal(sessions.get('a.test')?.toString(), 'a2');
  assert.equal(sessions.get('c.test')?.toString(), 'c1');
  // what it holds: two sessions of 2 bytes, two names of 6 characters (UTF-16)
  assert.equal(sessions.bytes, 2 * 2 + 2 * 2 * 6);
});
