import { main } from './capture-workload.js';

const code = await main(process.argv.slice(2), process.env);
process.exitCode = code;
setTimeout(() => process.exit(code), 1000).unref();
