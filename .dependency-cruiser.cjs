// The layer table (README "Architecture"): every import points down. Each rule forbids one upward
// or sideways arrow; `log`, `flow`, `config`, `cache` sit at the bottom.
const L = (name) => `^src/${name}/`;
const layers = {
  cli: [],
  platform: ['cli'],
  plugins: ['cli', 'platform'],
  ffi: ['cli', 'platform', 'plugins'],
  operator: ['cli', 'platform', 'plugins', 'ffi', 'capture', 'server'],
  capture: ['cli', 'platform', 'plugins', 'operator', 'server'],
  server: ['cli', 'platform', 'plugins', 'ffi', 'operator', 'capture'],
  plugin: ['cli', 'platform', 'plugins', 'ffi', 'operator', 'capture', 'server', 'k8s', 'enricher'],
  k8s: ['cli', 'platform', 'plugins', 'ffi', 'plugin', 'operator', 'capture', 'server', 'metrics', 'enricher'],
  metrics: ['cli', 'platform', 'plugins', 'ffi', 'plugin', 'operator', 'capture', 'server', 'k8s', 'enricher', 'cache'],
  enricher: ['cli', 'platform', 'plugins', 'ffi', 'plugin', 'operator', 'capture', 'server', 'k8s', 'metrics', 'config'],
  cache: ['cli', 'platform', 'plugins', 'ffi', 'plugin', 'operator', 'capture', 'server', 'k8s', 'metrics', 'enricher', 'config', 'flow'],
  config: ['cli', 'platform', 'plugins', 'ffi', 'plugin', 'operator', 'capture', 'server', 'k8s', 'metrics', 'enricher', 'cache', 'flow'],
  flow: ['cli', 'platform', 'plugins', 'ffi', 'plugin', 'operator', 'capture', 'server', 'k8s', 'metrics', 'enricher', 'cache', 'config', 'log'],
  log: ['cli', 'platform', 'plugins', 'ffi', 'plugin', 'operator', 'capture', 'server', 'k8s', 'metrics', 'enricher', 'cache', 'config', 'flow'],
};
module.exports = {
  forbidden: [
    ...Object.entries(layers)
      .filter(([, above]) => above.length)
      .map(([from, above]) => ({
        name: `${from}-imports-only-down`,
        severity: 'error',
        comment: `src/${from} may not import ${above.join(', ')}`,
        from: { path: L(from) },
        to: { path: `^src/(${above.join('|')})/` },
      })),
    {
      name: 'no-cross-os',
      severity: 'error',
      comment: 'linux code never imports windows code, and the other way round',
      from: { path: '/linux/' },
      to: { path: '/windows/' },
    },
    {
      name: 'no-cross-os-2',
      severity: 'error',
      from: { path: '/windows/' },
      to: { path: '/linux/' },
    },
    { name: 'no-circular', severity: 'error', from: {}, to: { circular: true } },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '\\.test\\.ts$' },
    tsConfig: { fileName: 'tsconfig.json' },
    tsPreCompilationDeps: true,
  },
};
