// `retina-agent diagnose` is its own command, loaded only when asked for (the agent's RSS stays as it is).
const argv = process.argv.slice(2);
const { main } = argv[0] === 'diagnose' ? await import('./diagnose.js') : await import('./agent.js');

const code = await main(argv[0] === 'diagnose' ? argv.slice(1) : argv, process.env);
process.exitCode = code;
// Everything was released; if a stray handle still holds the event loop, do not hang on it.
setTimeout(() => process.exit(code), 1000).unref();
