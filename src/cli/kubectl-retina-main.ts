import { main } from './kubectl-retina.js';

process.exitCode = await main(process.argv.slice(2), process.env);
