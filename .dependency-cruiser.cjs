// The layer table of the style guide (STYLE.md sections 1 and 13; docs/architecture.md) as an
// allow-list: each folder of src/ names the folders it may import, and any other import is an error,
// so every arrow points down. `log` (winston child loggers) sits below everything and is open to all.
// `metrics` here is the catalog and the registry; the Metrics Module (src/metrics/module) has its own
// rule below. A row may name a sub-folder (`server/hubble`): it then takes that folder out of its
// parent's row. eslint.config.js keeps the rest: OS folders, koffi, process.platform.
const mayImport = {
  cli: null, // the composition root: anything
  platform: ['plugins', 'plugin', 'capture', 'metrics', 'config', 'flow'], // capture: the OS's capture provider (./<os>/capture.ts)
  plugins: ['ffi', 'plugin', 'metrics', 'config', 'flow'], // never enricher, cache, k8s, the Metrics Module
  ffi: ['plugin'], // plugin lifecycle only: nothing above it
  operator: ['k8s', 'capture', 'plugin', 'metrics', 'config', 'flow'],
  // The node's flow pipeline (STYLE.md section 13): the one informer factory, the enricher and the
  // Metrics Module it drives; plugin: the IpInterest it hands the plugin manager. Never plugins, ffi, server.
  pipeline: ['k8s', 'enricher', 'cache', 'metrics', 'plugin', 'config', 'flow'],
  // Stored flow logs (STYLE.md section 13): FlowConsumers handed in by src/cli; the filter compiler from flow/hubble.
  export: ['k8s', 'metrics', 'config', 'flow'],
  // flow: a triggered capture follows the node's agent over Hubble (src/flow/hubble's protos and flow fields).
  capture: ['k8s', 'plugin', 'config', 'flow'],
  // kubectl retina why (src/cli/why.ts keeps the flags): the API server, and the agents' Hubble flows read as flow/hubble maps them.
  why: ['k8s', 'config', 'flow'],
  debug: ['k8s'], // kubectl-retina shell and bpftrace: pods, attach, the bpftrace program and its events
  server: ['k8s', 'plugin', 'metrics', 'config', 'flow'], // /metrics, /healthz, /readyz
  'server/hubble': ['k8s', 'metrics', 'config', 'flow'], // the Hubble service: flows in, gRPC out; k8s: peer discovery
  plugin: ['metrics', 'config', 'flow'],
  k8s: ['cache', 'config'],
  metrics: ['config', 'flow'],
  enricher: ['flow'],
  cache: [],
  chart: ['config'], // Helm chart values: Retina's values to ours (kubectl retina migrate-values), the chart's generated files
  config: [],
  flow: [],
  log: [],
};
const known = Object.keys(mayImport).join('|');
/** The rows nested in `from` (`server/hubble` in `server`): checked by their own row, not this one. */
const nested = (from) => Object.keys(mayImport).filter((k) => k.startsWith(`${from}/`));
// Known departures, each with its reason; keep this list short.
const exceptions = {
  // The adapter from the agent's IP cache to the enricher's EndpointLookup (Cilium's parser cell);
  // it belongs to the composition, but lives beside the lookup it implements.
  enricher: ['^src/enricher/cache-lookup\\.ts$', 'cache'],
  // `retina-agent diagnose`'s OS part (STYLE.md section 13): what only that OS can say comes from its
  // bindings (netlink, BPF object ids), read only; the rest of the platform layer stays above plugins.
  platform: ['^src/platform/(linux|windows)/diagnose\\.ts$', 'ffi'],
};

module.exports = {
  forbidden: [
    ...Object.entries(mayImport)
      .filter(([, allowed]) => allowed !== null)
      .map(([from, allowed]) => ({
        name: `${from}-imports-only-down`,
        severity: 'error',
        comment: `src/${from} may import only ${[...allowed, 'log'].join(', ')} (STYLE.md layer table)`,
        from: { path: `^src/${from}/`, pathNot: [exceptions[from]?.[0] ?? '^$', ...nested(from).map((n) => `^src/${n}/`)] },
        to: { path: '^src/', pathNot: `^src/(${[from, ...allowed, 'log'].join('|')})/` },
      })),
    {
      name: 'enricher-cache-adapter',
      severity: 'error',
      comment: 'src/enricher/cache-lookup.ts may import the cache too (see exceptions)',
      from: { path: exceptions.enricher[0] },
      to: { path: '^src/', pathNot: `^src/(enricher|flow|log|${exceptions.enricher[1]})/` },
    },
    {
      name: 'platform-diagnose-ffi',
      severity: 'error',
      comment: 'src/platform/<os>/diagnose.ts may import the bindings too (see exceptions)',
      from: { path: exceptions.platform[0] },
      to: { path: '^src/', pathNot: `^src/(platform|${mayImport.platform.join('|')}|log|${exceptions.platform[1]})/` },
    },
    {
      name: 'metrics-module-only-from-pipeline',
      severity: 'error',
      comment: 'the Metrics Module is a FlowConsumer the flow pipeline (src/pipeline) builds after the enricher and drives from the API server; no other layer imports it',
      from: { path: '^src/', pathNot: '^src/(cli|pipeline|metrics/module)/' },
      to: { path: '^src/metrics/module/' },
    },
    {
      name: 'through-index',
      severity: 'error',
      comment: 'another area is imported through its index.ts (its public surface, STYLE.md section 10), or a sub-folder\'s index.ts (src/ffi/linux, src/capture/linux)',
      from: { path: '^src/([^/]+)/' },
      to: { path: '^src/', pathNot: ['^src/$1/', '/index\\.ts$'] },
    },
    {
      name: 'layer-in-the-table',
      severity: 'error',
      comment: `every src/ folder has a row in the layer table (.dependency-cruiser.cjs mayImport): ${known}`,
      from: {},
      to: { path: '^src/', pathNot: `^src/(${known})/` },
    },
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
