/**
 * Composition root of the kubectl plugin `kubectl-retina` (`kubectl retina ...` once on PATH):
 * `capture create|list|delete|download`, `migrate-values`.
 */
import { runCreate } from './capture/create.js';
import { runDelete } from './capture/delete.js';
import { runDownload } from './capture/download.js';
import { runList } from './capture/list.js';
import { version } from './command.js';
import { runMigrateValues } from './migrate-values.js';

export const USAGE = `usage: kubectl-retina capture <create|list|delete|download> [flags]   (--help on each)
       kubectl-retina migrate-values -f RETINA_VALUES [-o OUT]
       kubectl-retina version`;

export async function main(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<number> {
  const [group, sub, ...rest] = argv;
  if (group === 'version' || group === '--version') {
    process.stdout.write(`${version()}\n`);
    return 0;
  }
  if (group === undefined || group === '--help' || group === '-h' || group === 'help') {
    process.stdout.write(USAGE + '\n');
    return group === undefined ? 2 : 0;
  }
  if (group === 'migrate-values') return runMigrateValues(argv.slice(1));
  if (group !== 'capture') {
    process.stderr.write(`kubectl-retina: unknown command ${JSON.stringify(group)}\n${USAGE}\n`);
    return 2;
  }
  switch (sub) {
    case 'create': return runCreate(rest, env);
    case 'list': return runList(rest, env);
    case 'delete': return runDelete(rest, env);
    case 'download': return runDownload(rest);
    default:
      process.stderr.write(`kubectl-retina capture: unknown subcommand ${JSON.stringify(sub ?? '')}\n${USAGE}\n`);
      return 2;
  }
}
