/**
 * A Prometheus-like scraper, run as its own process (inside the agent's network namespace when it has
 * one): `node scraper.js <port> <everyMs>` GETs /metrics every everyMs on one keep-alive connection
 * with Prometheus 2.x's Accept and Accept-Encoding headers, reads the body to its last byte and prints
 * one JSON line per scrape: time (ms since start), duration (ms), bytes, and the agent's V8 heap
 * (used and total, and total by space) and external memory in MB from the body. It runs until killed.
 */
import { Agent, request } from 'node:http';
import { performance } from 'node:perf_hooks';

const port = Number(process.argv[2]);
const everyMs = Number(process.argv[3]);
if (!(port > 0) || !(everyMs > 0)) throw new Error('usage: scraper.js <port> <everyMs>');
const ACCEPT = 'application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1';
const agent = new Agent({ keepAlive: true, maxSockets: 1 });
const t0 = performance.now();

/** nodejs_heap_space_size_total_bytes by space (MB): where V8's committed heap is. */
function spaces(body: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const m of body.matchAll(/^nodejs_heap_space_size_total_bytes\{space="(\w+)"\} ([0-9.e+]+)$/gm)) out[m[1] as string] = Number((Number(m[2]) / 2 ** 20).toFixed(2));
  return out;
}

const mb = (body: string, name: string): number => {
  const m = new RegExp(`^${name} ([0-9.e+]+)$`, 'm').exec(body);
  return m ? Number((Number(m[1]) / 2 ** 20).toFixed(2)) : NaN;
};

function scrape(): Promise<void> {
  return new Promise((resolve) => {
    const start = performance.now();
    const req = request({ host: '127.0.0.1', port, path: '/metrics', agent, headers: { Accept: ACCEPT, 'Accept-Encoding': 'gzip', 'User-Agent': 'Prometheus/2.53.0' } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        console.log(JSON.stringify({
          t: Math.round(start - t0), ms: Number((performance.now() - start).toFixed(2)), status: res.statusCode, bytes: body.length,
          heapUsedMB: mb(body, 'nodejs_heap_size_used_bytes'), heapTotalMB: mb(body, 'nodejs_heap_size_total_bytes'), externalMB: mb(body, 'nodejs_external_memory_bytes'),
          spacesMB: spaces(body),
        }));
        resolve();
      });
      res.on('error', () => resolve());
    });
    req.on('error', (e) => {
      console.log(JSON.stringify({ t: Math.round(start - t0), error: e.message }));
      resolve();
    });
    req.end();
  });
}

for (;;) {
  const start = performance.now();
  await scrape();
  await new Promise((r) => setTimeout(r, Math.max(0, everyMs - (performance.now() - start))));
}
