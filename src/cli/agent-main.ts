// `retina-agent diagnose` is its own command, loaded only when asked for (the agent's RSS stays as it is).
import { exitWhenDone } from './command.js';

const argv = process.argv.slice(2);
const { main } = argv[0] === 'diagnose' ? await import('./diagnose.js') : await import('./agent.js');

const code = await main(argv[0] === 'diagnose' ? argv.slice(1) : argv, process.env);
exitWhenDone(code);
