// prom-client's per-class files (src/metrics/prom.ts), typed there from prom-client's index types.
declare module 'prom-client/lib/counter.js' { const value: unknown; export default value; }
declare module 'prom-client/lib/defaultMetrics.js' { const value: unknown; export default value; }
declare module 'prom-client/lib/gauge.js' { const value: unknown; export default value; }
declare module 'prom-client/lib/histogram.js' { const value: unknown; export default value; }
declare module 'prom-client/lib/registry.js' { const value: unknown; export default value; }
