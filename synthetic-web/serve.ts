/**
 * Runs the standard synthetic web until SIGTERM or SIGINT:
 *   node serve.js [--port N] [--log FILE]
 * Prints `synthetic web on 127.0.0.1:PORT`, then the seed URLs one per line.
 */
import { InvalidOptionError } from '../core/errors.js';
import { SyntheticWeb, type SyntheticWebOptions } from './synthetic-web.js';

function parseArgs(argv: readonly string[]): SyntheticWebOptions {
  const options: SyntheticWebOptions = {};
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const value = argv[i + 1];
    if (flag !== '--port' && flag !== '--log')
      throw new InvalidOptionError(`unknown argument ${flag}; usage: serve [--port N] [--log FILE]`);
    if (value === undefined || value.startsWith('--')) throw new InvalidOptionError(`${flag} needs a value`);
    i++;
    if (flag === '--log') {
      options.logFile = value;
    } else {
      const port = Number(value);
      if (!/^\d+$/.test(value) || port > 65535)
        throw new InvalidOptionError(`--port must be an integer from 0 to 65535, got ${value}`);
      options.port = port;
    }
  }
  return options;
}

async function main(): Promise<void> {
  let options: SyntheticWebOptions;
  try {
    options = parseArgs(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n`);
    process.exitCode = 2;
    return;
  }
  const web = await SyntheticWeb.start(options);
  process.stdout.write(`synthetic web on 127.0.0.1:${web.port}\n${web.seedUrls().join('\n')}\n`);
  const stop = (): void => {
    process.off('SIGTERM', stop);
    process.off('SIGINT', stop);
    void web.close().then(() => process.exit(0));
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

await main();
