import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SyntheticWeb } from '../../synthetic-web/synthetic-web.js';
import { standardExpectations } from '../../synthetic-web/standard-web.js';
import { checkPoliteness, formatPolitenessReport } from '../../synthetic-web/politeness.js';
import { CLI, countByUrl, finallyFetchedUrls, removeDir, sh, sleep, tempDir, writeSeeds } from '../e2e/harness.js';
import { KafkaPort } from '../../runtime/engines/kafka/kafka-port.js';
import { kafkaInfra } from './infra.js';
import { launchInstance, type Instance } from './instances.js';
import { injectArgs, LOOPBACK_WEB_ARGS } from './page-records.js';
import { python } from '../python/python.js';
import { parseExposition, sampleSum } from '../python/prometheus.js';

const READER = fileURLToPath(new URL('../../../test/python/read_page_records.py', import.meta.url));

test(
  'two instances of each stateful role crawl the test web on Kafka; one is SIGKILLed and restarted; page-records holds every page exactly once; no politeness violation; every store equals its changelog replay',
  { timeout: 600_000 },
  async (t) => {
    const { brokers, registry } = kafkaInfra();
    const web = await SyntheticWeb.start();
    const dir = tempDir('kafka-crawl');
    const instances: Instance[] = [];
    try {
      const created = await sh(process.execPath, [CLI, 'topics', 'create', '--brokers', brokers]);
      assert.equal(created.code, 0, created.stderr);
      // the crawl's state lives in these topics: leftovers of an earlier crawl would make this one a resumption
      const port = new KafkaPort([brokers], 'crawlstream-test');
      const admin = await port.admin();
      const ends = await admin.endOffsets('page-records').finally(() => admin.close().then(() => port.close()));
      assert.deepEqual(
        [...ends.values()].filter((n) => n > 0),
        [],
        'page-records is not empty: this test needs a fresh broker (scripts/kafka/start.sh starts one)',
      );
      const seeds = writeSeeds(dir, web.seedUrls());
      const injected = await sh(process.execPath, [CLI, ...injectArgs(seeds, brokers, registry)]);
      assert.equal(injected.code, 0, injected.stderr);

      const common = [
        '--brokers',
        brokers,
        '--registry',
        registry,
        ...LOOPBACK_WEB_ARGS,
        '--quiet',
        '--session-timeout',
        '6000',
        // leases lost in the kill expire (not-after + fetch timeout + 5 s) well inside the 20 s of quiet
        // that ends the crawl, not just after it
        '--fetch-timeout',
        '3000',
        '--metrics-port',
        '0',
      ];
      const began = Date.now();
      const launch = (name: string, role: string): Instance =>
        launchInstance(instances, dir, name, role, common, began);
      for (const [name, role] of [
        ['frontier-a', 'frontier'],
        ['frontier-b', 'frontier'],
        ['parser-a', 'parser'],
        ['parser-b', 'parser'],
        ['fetcher-a', 'fetcher'],
      ] as const)
        launch(name, role);

      // SIGKILL one frontier instance mid-crawl; its partitions move to the other, which restores them from the changelogs
      const victim = instances.find((i) => i.name === 'frontier-a')!;
      while (web.requests().length < 20 && Date.now() - began < 180_000) await sleep(200);
      const atKill = web.requests().length;
      assert.ok(
        atKill >= 20,
        `the crawl did not start: ${atKill} requests in 180 s\n${(await Promise.race([victim.exited, sleep(10).then(() => undefined)]))?.stderr ?? ''}`,
      );
      victim.child.kill('SIGKILL');
      const killed = await victim.exited;
      assert.equal(killed.signal, 'SIGKILL');
      t.diagnostic(`SIGKILLed frontier-a after ${Date.now() - began} ms at ${atKill} requests`);
      // past the 6 s session timeout frontier-b owns every frontier partition, restored from the changelogs;
      // then restart frontier-a on its old local state: partitions move back (frontier-b is fenced for them)
      await sleep(12_000);
      const beforeRestart = web.requests().length;
      launch('frontier-a', 'frontier');
      t.diagnostic(`restarted frontier-a after ${Date.now() - began} ms at ${beforeRestart} requests`);
      assert.ok(
        beforeRestart > atKill,
        `no request in the 12 s after the SIGKILL: frontier-b did not take over\n${killed.stderr.slice(-3000)}`,
      );

      // done when the web has seen no request for 20 s (the slowest politeness wait of the test web is 2 s)
      let last = -1;
      let quietSince = Date.now();
      while (Date.now() - quietSince < 20_000 && Date.now() - began < 420_000) {
        await sleep(1000);
        const n = web.requests().length;
        if (n !== last) [last, quietSince] = [n, Date.now()];
      }
      t.diagnostic(`crawl on Kafka: ${web.requests().length} requests, quiet after ${quietSince - began} ms`);
      const requested = new Set(web.requests().map((e) => `${e.host}${e.path}`));
      const missing = Object.entries(standardExpectations()).flatMap(([host, e]) =>
        e.fetch.filter((path) => !requested.has(`${host}${path}`)).map((path) => `${host}${path}`),
      );
      t.diagnostic(`expected pages never requested: ${missing.join(', ') || 'none'}`);
      const keep = process.env['CRAWLSTREAM_TEST_LOGS'];
      if (keep)
        writeFileSync(
          join(keep, 'requests.jsonl'),
          web
            .requests()
            .map((e) => JSON.stringify(e))
            .join('\n'),
        );
      // every role's /metrics parses with an independent parser; the one fetcher counted every request
      const processedByRole = new Map<string, number>();
      for (const i of instances) {
        assert.ok(i.ops, `${i.name} never said where its endpoints are`);
        assert.equal((await fetch(`http://${i.ops}/readyz`)).status, 200, `${i.name} is not ready`);
        const families = parseExposition(await (await fetch(`http://${i.ops}/metrics`)).text());
        const processed = sampleSum(families, 'crawlstream_records_processed_total');
        processedByRole.set(i.role, (processedByRole.get(i.role) ?? 0) + processed);
        if (i.role === 'fetcher')
          assert.equal(sampleSum(families, 'crawlstream_fetches_total'), web.requests().length, 'fetches vs requests');
      }
      for (const [role, n] of processedByRole) assert.ok(n > 0, `no ${role} instance processed a record`);
      for (const i of instances) i.child.kill('SIGTERM');
      const stderrs: string[] = [`== frontier-a before SIGKILL\n${killed.stderr.slice(-6000)}`];
      const logs = (): string => stderrs.join('\n');
      for (const i of instances) {
        const ended = await i.exited;
        stderrs.push(`== ${i.name}\n${ended.stderr.slice(-6000)}`);
        assert.equal(ended.code, 0, `${i.name} exited ${ended.code}/${ended.signal}\n${ended.stderr.slice(-4000)}`);
        assert.match(ended.stdout, /\[status\] stopped \(signal SIGTERM\)/, i.name);
      }

      const log = web.requests();
      const report = checkPoliteness(log, web.sites, { userAgent: 'crawlstream' });
      assert.deepEqual(report.violations, [], formatPolitenessReport(report));

      // a consumer we did not write: confluent-kafka (read_committed) + fastavro through the registry
      const read = await sh(python(), [READER, brokers, registry, 'page-records']);
      assert.equal(read.code, 0, read.stderr);
      const records = read.stdout
        .split('\n')
        .filter((l) => l.trim() !== '')
        .map((l) => JSON.parse(l) as { url: string; status: number; schemaId: number });
      const counts = countByUrl(records);
      assert.deepEqual(
        [...counts].filter(([, n]) => n !== 1),
        [],
        'a URL has more than one committed page record',
      );
      assert.deepEqual(
        new Set(counts.keys()),
        finallyFetchedUrls(log, web.port),
        `fetched pages and committed page records differ\n${logs()}`,
      );
      assert.ok(counts.size >= 50, `only ${counts.size} pages recorded; the instances said:\n${logs()}`);

      // every local store copy equals a replay of its changelog, and every store partition has a current copy somewhere
      const current = new Set<string>();
      const copies = new Set<string>();
      for (const i of instances.filter((x) => x.role !== 'fetcher')) {
        const replay = await sh(process.execPath, [
          CLI,
          'replay',
          '--store',
          'all',
          '--brokers',
          brokers,
          '--data',
          i.dataDir,
        ]);
        assert.equal(replay.code, 0, `replay of ${i.name}:\n${replay.stdout}\n${replay.stderr}`);
        const lines = replay.stdout.split('\n').filter((l) => /^(ok|MISMATCH)/.test(l));
        assert.ok(lines.length > 0, `${i.name} has no store copies:\n${replay.stdout}`);
        for (const line of lines) {
          const m = /^ok\s+(\S+) partition (\d+): (\d+) entries .* \((current|behind[^)]*)\)$/.exec(line);
          assert.ok(m, `${i.name}: ${line}`);
          copies.add(`${m[1]}/${m[2]}`);
          if (m[4] === 'current') current.add(`${m[1]}/${m[2]}`);
        }
      }
      t.diagnostic(`replay: ${copies.size} store partitions verified, ${current.size} current`);
      assert.deepEqual(
        [...copies].filter((c) => !current.has(c)),
        [],
        'store partitions without a current copy',
      );
      for (const store of ['frontier-hosts', 'frontier-meta', 'parser-recorded']) {
        for (let p = 0; p < 4; p++) assert.ok(current.has(`${store}/${p}`), `no copy of ${store} partition ${p}`);
      }
    } finally {
      for (const i of instances) i.child.kill('SIGKILL');
      await web.close();
      removeDir(dir);
    }
  },
);
