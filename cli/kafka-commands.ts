import { INJECT_USAGE, runInject } from './inject.js';
import { parseRunArgs, RUN_USAGE } from './run-options.js';
import { runRole } from './run.js';
import { runTopics, TOPICS_USAGE } from './topics.js';

/** The Kafka engine's commands (`topics`, `run`, `inject`; `replay` serves both engines: cli/replay.ts); undefined for any other command. */
export async function kafkaCommand(
  command: string | undefined,
  args: string[],
  out: (line: string) => void,
): Promise<number | undefined> {
  const err = (line: string): void => void process.stderr.write(`${line}\n`);
  const help = args.includes('--help');
  switch (command) {
    case 'topics':
      if (help) return usage(out, TOPICS_USAGE);
      return runTopics(args, out);
    case 'run':
      if (help) return usage(out, RUN_USAGE);
      return runRole(parseRunArgs(args), out, err);
    case 'inject':
      if (help) return usage(out, INJECT_USAGE);
      return runInject(args, out, err);
    default:
      return undefined;
  }
}

function usage(out: (line: string) => void, text: string): number {
  out(text);
  return 0;
}
