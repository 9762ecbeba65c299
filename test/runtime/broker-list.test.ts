import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Socket } from 'node:net';
import { parseControlArgs } from '../../cli/control.js';
import { runInject } from '../../cli/inject.js';
import { parseReplayArgs } from '../../cli/replay.js';
import { runReparse } from '../../cli/replay-reparse.js';
import { runTopics } from '../../cli/topics.js';
import { kafkaEndpoints, parseRunArgs } from '../../cli/run-options.js';
import { isCrawlError } from '../../core/errors.js';
import { brokerText, parseBrokerList } from '../../runtime/engines/kafka/broker-list.js';
import { KafkaPort } from '../../runtime/engines/kafka/kafka-port.js';

const refused = (f: () => unknown, message: RegExp): void =>
  assert.throws(f, (err: unknown) => {
    assert.ok(isCrawlError(err), `expected a CrawlError, got ${String(err)}`);
    assert.equal(err.code, 'CS_INVALID_OPTION');
    assert.match(err.message.split('\n')[0]!, message);
    return true;
  });

test('a broker list takes host:port, IPv4:port and [IPv6]:port, trimmed, empty entries skipped', () => {
  assert.deepEqual(parseBrokerList(' kafka-0.kafka.svc:9092, 10.0.0.1:19092,,[::1]:9093 ,[fd00::7]:1,kafka_1:65535'), [
    { host: 'kafka-0.kafka.svc', port: 9092 },
    { host: '10.0.0.1', port: 19092 },
    { host: '::1', port: 9093 },
    { host: 'fd00::7', port: 1 },
    { host: 'kafka_1', port: 65535 },
  ]);
  // entries already split, and a list read back from its own text, give the same addresses
  const parsed = parseBrokerList(['a.test:1', '[::ffff:127.0.0.1]:2,b:3']);
  assert.deepEqual(parsed.map(brokerText), ['a.test:1', '[::ffff:127.0.0.1]:2', 'b:3']);
  assert.deepEqual(parseBrokerList(parsed.map(brokerText)), parsed);
});

test('a broker list refuses each kind of junk with a message naming the entry and what is wrong', () => {
  const cases: [string, RegExp][] = [
    ['', /^--brokers needs at least one host:port, got ""$/],
    [' , ,', /^--brokers needs at least one host:port/],
    ['a.test', /^--brokers: "a\.test" has no port: give host:port$/],
    [':9092', /^--brokers: ":9092" has no host/],
    ['a.test:', /^--brokers: "a\.test:" has port "": a port is a whole number from 1 to 65535$/],
    ['a.test:port', /has port "port": a port is a whole number from 1 to 65535/],
    ['a.test:0', /has port "0": a port is a whole number from 1 to 65535/],
    ['a.test:65536', /has port "65536"/],
    ['a.test:99999999', /has port "99999999"/],
    ['a.test:-1', /has port "-1"/],
    ['a.test:+9092', /has port "\+9092"/],
    ['a test:9092', /^--brokers: "a test:9092" has a blank inside/],
    ['::1:9092', /^--brokers: "::1:9092" is an IPv6 address without brackets: give \[IPv6\]:port/],
    ['fd00::7', /is an IPv6 address without brackets/],
    ['[::1]', /^--brokers: "\[::1\]" has no port: give \[IPv6\]:port$/],
    ['[::1', /is not \[IPv6\]:port/],
    ['[::1]9092', /is not \[IPv6\]:port/],
    ['[::1]:x', /has port "x"/],
    ['[kafka]:9092', /holds "kafka" in brackets, which is not an IPv6 address/],
    ['[10.0.0.1]:9092', /holds "10\.0\.0\.1" in brackets, which is not an IPv6 address/],
    ['PLAINTEXT://a.test:9092', /^--brokers: "PLAINTEXT:\/\/a\.test:9092" has a scheme: give host:port/],
    ['-a.test:9092', /has host "-a\.test", which is neither a DNS name nor an IP address/],
    ['a..test:9092', /has host "a\.\.test"/],
    ['a/b:9092', /has host "a\/b"/],
    ['999.1.1.1:9092', /has host "999\.1\.1\.1", which is neither/],
    [`${'a'.repeat(64)}.test:9092`, /which is neither a DNS name nor an IP address/],
  ];
  for (const [bad, message] of cases) {
    refused(() => parseBrokerList(bad), message);
    // good entries beside a bad one do not hide it (a blank entry between commas is skipped, not bad)
    if (bad.trim() !== '' && !bad.includes(',')) refused(() => parseBrokerList(`ok.test:1,${bad},ok.test:2`), message);
  }
});

test('every command that takes --brokers parses it with that one parser', async () => {
  const registry = ['--registry', 'http://127.0.0.1:1'];
  const list = '[::1]:9092,k.test:9093';
  const parsed = ['[::1]:9092', 'k.test:9093'];
  assert.deepEqual(kafkaEndpoints(list, undefined, '').brokers, parsed);
  assert.deepEqual(parseRunArgs(['--role', 'all', '--data', 'd', '--brokers', list, ...registry], {}).brokers, parsed);
  const control = parseControlArgs(['block', 'example.org', '--brokers', list, ...registry], 0, {}).target;
  assert.deepEqual('brokers' in control ? control.brokers : undefined, parsed);
  assert.deepEqual(
    parseReplayArgs('verify', ['--store', 'all', '--data', 'd', '--brokers', list], {}).kafka?.brokers,
    parsed,
  );
  const bad = '::1:9092';
  const message = /^--brokers: "::1:9092" is an IPv6 address without brackets/;
  refused(() => kafkaEndpoints(bad, undefined, ''), message);
  refused(() => parseRunArgs(['--role', 'all', '--data', 'd', '--brokers', bad, ...registry], {}), message);
  refused(() => parseControlArgs(['block', 'example.org', '--brokers', bad, ...registry], 0, {}), message);
  refused(() => parseReplayArgs('verify', ['--store', 'all', '--data', 'd', '--brokers', bad], {}), message);
  refused(() => new KafkaPort([bad], 'test'), message);
  const quiet = (): void => undefined;
  for (const run of [
    () => runInject(['--brokers', bad, ...registry, 'https://example.org/'], quiet, quiet, {}),
    () => runTopics(['create', '--brokers', bad], quiet, {}),
    () => runReparse(['--data', 'd', '--brokers', bad, ...registry], quiet, {}),
  ])
    await assert.rejects(run(), (err: unknown) => {
      refused(() => {
        throw err;
      }, message);
      return true;
    });
});

test('a port connects to a seed broker given as an [IPv6]:port literal', async (t) => {
  // an IPv4-mapped IPv6 address: an IPv6 literal to kafkajs, loopback 127.0.0.1 on the wire
  const seen: string[] = [];
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.once('data', (bytes) => {
      seen.push(bytes.toString('latin1'));
      socket.destroy(); // no Kafka here: the client's first request is all the test needs
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    for (const s of sockets) s.destroy();
    server.close();
  });
  const { port } = server.address() as { port: number };
  const kafkaPort = new KafkaPort([`[::ffff:127.0.0.1]:${port}`], 'crawlstream-ipv6-seed-test');
  await assert.rejects(kafkaPort.admin(), (err: unknown) => {
    assert.ok(isCrawlError(err));
    assert.equal(err.code, 'CS_KAFKA');
    assert.match(err.message, new RegExp(`^cannot connect to \\[::ffff:127\\.0\\.0\\.1\\]:${port}: `));
    return true;
  });
  await kafkaPort.close();
  assert.ok(seen.length >= 1, 'no connection reached the broker address');
  assert.ok(
    seen.every((request) => request.includes('crawlstream-ipv6-seed-test')),
    'a connection carried no request of this client',
  );
});
