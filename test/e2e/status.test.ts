import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { SyntheticWeb } from '../../synthetic-web/synthetic-web.js';
import { CLI, crawlArgs, removeDir, startCli, tempDir, writeSeeds } from './harness.js';
import { awaitPhases, checkAgainstLog, statusCli, statusSeeds, statusSites } from './status-web.js';

function cli(args: string[]): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8' });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

test('crawlstream status --help, and a bad flag is one line and exit 2', () => {
  const help = cli(['status', '--help']);
  assert.equal(help.code, 0);
  assert.match(help.stdout, /^usage: crawlstream status \[SITE\] --ops URL \[--json\]/);
  assert.equal(cli(['status', '-h']).code, 0);
  const bad = cli(['status', 'example.com', '--ops', '127.0.0.1:1', '--colour']);
  assert.equal(bad.code, 2);
  // the CLI's one grammar: one line naming the refused flag, then the command's usage
  const [first, ...rest] = bad.stderr.split('\n');
  assert.match(first!, /^crawlstream status: unknown option --colour/);
  assert.match(rest.join('\n'), /^usage: crawlstream status /m);
  const noOps = cli(['status']);
  assert.equal(noOps.code, 2);
  assert.match(noOps.stderr.split('\n')[0]!, /--ops URL is required/);
  const fromEnv = spawnSync(process.execPath, [CLI, 'status', '--json'], {
    encoding: 'utf8',
    env: { ...process.env, CRAWLSTREAM_OPS: '127.0.0.1:1' },
  });
  assert.equal(fromEnv.status, 1, 'CRAWLSTREAM_OPS stands for --ops, as every setting has its variable');
  assert.match(fromEnv.stderr, /cannot reach http:\/\/127\.0\.0\.1:1/);
  const unreachable = cli(['status', '--ops', '127.0.0.1:1']);
  assert.equal(unreachable.code, 1);
  assert.match(unreachable.stderr, /cannot reach http:\/\/127\.0\.0\.1:1/);
  assert.match(cli(['help']).stdout, /crawlstream status \[SITE\] --ops URL \[--json\]/);
});

test(
  'on the embedded engine crawlstream status shows a queued, a backed-off and a robots-parked site, as the server log has it',
  { timeout: 240_000 },
  async () => {
    const web = await SyntheticWeb.start({ sites: statusSites() });
    const dir = tempDir('status');
    const { child, exited } = startCli(
      crawlArgs(writeSeeds(dir, statusSeeds(web)), join(dir, 'data'), [
        '--metrics-port',
        '0',
        '--log-format',
        'json',
      ]).filter((a) => a !== '--until-idle'),
    );
    let stderr = '';
    let address: string | undefined;
    child.stderr!.on('data', (d: Buffer) => {
      stderr += d.toString();
      address ??= /"address":"([^"]+)"/.exec(stderr)?.[1];
    });
    try {
      const ops = async () => {
        while (address === undefined) {
          assert.equal(child.exitCode, null, stderr);
          await new Promise((r) => setTimeout(r, 100));
        }
        return address;
      };
      const statuses = await awaitPhases(ops, () => child.exitCode === null, 120_000);
      checkAgainstLog(statuses, web.requests());

      const all = await statusCli(await ops());
      assert.equal(all.code, 0, all.stderr);
      assert.match(all.stdout, /^engine embedded {2}instance \S+ {2}state running {2}live yes {2}ready yes/);
      assert.match(all.stdout, /\n\S+\s+frontier\s+\d+\s+running\n/);
      const json = JSON.parse((await statusCli(await ops(), undefined, ['--json'])).stdout) as {
        totals: { parkedHosts: number; tasksByState: Record<string, number> };
      };
      assert.ok(json.totals.parkedHosts >= 1, 'norobots.test is a parked host in the totals');
      assert.equal(Object.keys(json.totals.tasksByState).join(), 'running');

      const unknown = await statusCli(await ops(), 'nowhere.test');
      assert.equal(unknown.code, 0, unknown.stderr);
      assert.match(unknown.stdout, /no host of this site is known/);
      const bad = await statusCli(await ops(), 'not a site');
      assert.equal(bad.code, 2);
    } finally {
      child.kill('SIGTERM');
      await exited;
      await web.close();
      removeDir(dir);
    }
  },
);
