import { main } from './operator.js';
import { exitWhenDone } from './command.js';

const code = await main(process.argv.slice(2), process.env);
exitWhenDone(code);
