/**
 * `kubectl-retina why SRC DST[:PORT]`: why SRC cannot reach DST, from the API server and the agents'
 * recent flows (src/why does the work; here: the flags, the Hubble protos, the printing).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { getAsset, isSea } from 'node:sea';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hubbleProtoFiles, type HubbleProtoFiles } from '../flow/hubble/index.js';
import { explainReach, parseTarget, TargetSpecError, type HubbleTls, type WhyAnswer } from '../why/index.js';
import { parseFlags, UsageError } from './args.js';
import { connect } from './capture/flags.js';
import { packageFile } from './command.js';
import { requestTimeoutMs, withKubeFlags, type KubeFlags } from './kube-flags.js';

export const WHY_USAGE = `usage: kubectl-retina why SRC DST[:PORT] [-o text|json] [--since 10m] [--last 2000] [--timeout 10s] [kubectl's flags]
  SRC, DST: a pod (NS/NAME, pod/NS/NAME, or NAME in -n's namespace), a Service (svc/NS/NAME), an IP
  ([IPv6]:PORT with a port), or for DST a DNS name (web.shop.svc.cluster.local)
  -o, --output   text (default) or json
  --since        how far back the agents' flows count (default 10m)
  --last         the last N matching flows asked of each agent (default 2000)
  --timeout      the answer's budget, from the command's start (default 10s)
  --hubble-tls-ca FILE, --hubble-tls-cert FILE, --hubble-tls-key FILE, --hubble-cluster-name NAME
                 agents with hubble.tls.enabled: the CA that signed them, a client certificate and
                 key for mutual TLS, and hubble.clusterName (default "default")`;

/** The Hubble protos the plugin reads GetFlows with: from the package, or a single executable's assets. */
export const WHY_PROTO_FILES: readonly string[] = ['observer.proto', 'flow.proto', 'relay.proto'];

function withProtos<T>(use: (p: HubbleProtoFiles) => Promise<T>): Promise<T> {
  if (!isSea()) return use(hubbleProtoFiles(packageFile('proto/hubble'), ['observer.proto']));
  const dir = mkdtempSync(join(tmpdir(), 'kubectl-retina-proto-'));
  for (const f of WHY_PROTO_FILES) writeFileSync(join(dir, f), getAsset(`proto/hubble/${f}`, 'utf8'));
  const protos = hubbleProtoFiles(dir, ['observer.proto']);
  try {
    protos.definition(); // parsed now, so that the folder can go
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return use(protos);
}

function duration(flag: string, text: string): number {
  try {
    return requestTimeoutMs(text);
  } catch {
    throw new UsageError(`--${flag}: ${JSON.stringify(text)} is not a duration (30s, 10m, 1h)`);
  }
}

/** The answer as text: the cause first, then its evidence. */
export function whyText(a: WhyAnswer & { readonly commandMs: number }): string {
  const port = a.destination.port === undefined ? '' : ` port ${a.destination.port}`;
  const lines = [
    `${a.source.text} -> ${a.destination.text}${port}`,
    `cause (${a.cause.code}): ${a.cause.summary}`,
    'evidence:',
    ...a.cause.evidence.map((e) => `  - ${e}`),
    `answered in ${a.tookMs} ms (${a.commandMs} ms since the command started) from ${a.flowsSeen} flows of ${a.agents.length} agent(s)`,
  ];
  return lines.join('\n') + '\n';
}

/** The TLS flags' files, read now (a missing one is named with its flag). */
function tlsOf(f: { str(name: string): string | undefined }): HubbleTls | undefined {
  const read = (flag: string): Buffer | undefined => {
    const file = f.str(flag);
    if (file === undefined || file === '') return undefined;
    try {
      return readFileSync(file);
    } catch (e) {
      throw new UsageError(`--${flag}: ${(e as Error).message}`);
    }
  };
  const ca = read('hubble-tls-ca');
  const cert = read('hubble-tls-cert');
  const key = read('hubble-tls-key');
  if (!ca) {
    if (cert || key) throw new UsageError('--hubble-tls-cert and --hubble-tls-key need --hubble-tls-ca');
    return undefined;
  }
  if ((cert === undefined) !== (key === undefined)) throw new UsageError('--hubble-tls-cert and --hubble-tls-key go together');
  return { ca, cert, key, clusterName: f.str('hubble-cluster-name') ?? 'default' };
}

export async function runWhy(argv: readonly string[], env: NodeJS.ProcessEnv, kubeFlags: KubeFlags = {}): Promise<number> {
  let f;
  let kubeArgs: KubeFlags;
  let windowMs: number;
  let timeoutMs: number;
  let tls: HubbleTls | undefined;
  try {
    const split = withKubeFlags(argv, kubeFlags);
    kubeArgs = split.kube;
    f = parseFlags(split.rest, { strings: { output: 'text', since: '10m', last: '2000', timeout: '10s', 'hubble-tls-ca': undefined, 'hubble-tls-cert': undefined, 'hubble-tls-key': undefined, 'hubble-cluster-name': 'default' }, booleans: { help: false }, short: { o: 'output', h: 'help' }, positionals: true });
    if (f.bool('help')) {
      process.stdout.write(WHY_USAGE + '\n');
      return 0;
    }
    if (f.positionals.length !== 2) throw new UsageError(`want SRC and DST, got ${f.positionals.length} argument(s)`);
    if (!['text', 'json'].includes(f.str('output') ?? '')) throw new UsageError(`--output: ${JSON.stringify(f.str('output'))} is not text or json`);
    windowMs = duration('since', f.str('since') ?? '');
    timeoutMs = duration('timeout', f.str('timeout') ?? '');
    if (timeoutMs < 1000) throw new UsageError('--timeout: at least 1s');
    if (f.int('last') < 1) throw new UsageError('--last: at least 1');
    tls = tlsOf(f);
  } catch (e) {
    process.stderr.write(`kubectl-retina why: ${(e as Error).message}\n${WHY_USAGE}\n`);
    return 2;
  }
  const kube = await connect(kubeArgs, env, 'why');
  if (!kube) return 1;
  let src, dst;
  try {
    src = parseTarget(f.positionals[0] as string, 'SRC', kube.namespace, false);
    dst = parseTarget(f.positionals[1] as string, 'DST', kube.namespace, true);
  } catch (e) {
    process.stderr.write(`kubectl-retina why: ${(e as TargetSpecError).message}\n${WHY_USAGE}\n`);
    return 2;
  }
  const client = kube.client();
  try {
    // --timeout counts from the command's start (performance.now(): ms since the process began), its loading included
    const budgetMs = Math.max(1000, timeoutMs - Math.round(performance.now()));
    const answer = await withProtos((protos) => explainReach({ client, protos, src, dst, windowMs, last: f.int('last'), timeoutMs: budgetMs, ...(tls ? { tls } : {}) }));
    const out = { ...answer, commandMs: Math.round(performance.now()) };
    process.stdout.write(f.str('output') === 'json' ? JSON.stringify(out, null, 2) + '\n' : whyText(out));
    return 0;
  } catch (e) {
    process.stderr.write(`kubectl-retina why: ${(e as Error).message}\n`);
    return 1;
  } finally {
    client.close();
  }
}
