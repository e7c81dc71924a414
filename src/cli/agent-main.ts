import { main } from './agent.js';

const code = await main(process.argv.slice(2), process.env);
process.exitCode = code;
// Everything was released; if a stray handle still holds the event loop, do not hang on it.
setTimeout(() => process.exit(code), 1000).unref();
