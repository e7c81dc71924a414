import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ApiError, type RestClient } from '../../k8s/index.js';
import { CHART_AGENT_SELECTOR, captureImages } from './images.js';

/** An in-memory API answering the DaemonSet list (or refusing it), recording what was asked. */
function fakeApi(answer: unknown[] | ApiError): RestClient & { asked: string[] } {
  const asked: string[] = [];
  return {
    asked,
    async request<T>(method: string, path: string, o?: { query?: Record<string, unknown> }): Promise<T> {
      asked.push(`${method} ${path}?${String(o?.query?.['labelSelector'] ?? '')}`);
      if (answer instanceof ApiError) throw answer;
      return { items: answer } as T;
    },
    stream: () => Promise.reject(new Error('no streams')),
    bytesReceived: () => 0,
    config: { server: 'https://fake.invalid', source: 'fake', authorize: async () => undefined },
    close: () => undefined,
  };
}

const ds = (ns: string, name: string, os: 'linux' | 'windows', image: string, container = 'retina-agent'): unknown => ({
  metadata: { namespace: ns, name },
  spec: { selector: { matchLabels: { 'kubernetes.io/os': os } }, template: { spec: { nodeSelector: { 'kubernetes.io/os': os }, containers: [{ name: 'sidecar', image: 'other:1' }, { name: container, image }] } } },
});

test("the chart's agent DaemonSets give the images, per OS, from the agent's container", async () => {
  const api = fakeApi([ds('kube-system', 'retina-agent-windows', 'windows', 'reg/rt-windows:2'), ds('kube-system', 'retina-agent-linux', 'linux', 'reg/rt:2')]);
  const i = await captureImages(api, { debug: false }, '0.1.0', {});
  assert.deepEqual(i, {
    linuxImage: 'reg/rt:2', windowsImage: 'reg/rt-windows:2',
    linuxFrom: 'daemonset kube-system/retina-agent-linux', windowsFrom: 'daemonset kube-system/retina-agent-windows',
  });
  assert.deepEqual(api.asked, [`GET /apis/apps/v1/daemonsets?${CHART_AGENT_SELECTOR}`]);
});

test('--image wins over the chart (and the cluster is not asked); --windows-image over --image for Windows', async () => {
  const api = fakeApi([ds('kube-system', 'retina-agent-linux', 'linux', 'reg/rt:2')]);
  assert.deepEqual(await captureImages(api, { image: 'mine:1', debug: false }, '0.1.0', {}), { linuxImage: 'mine:1', windowsImage: 'mine:1', linuxFrom: '--image', windowsFrom: '--image' });
  assert.deepEqual(api.asked, []);
  const both = await captureImages(api, { image: 'mine:1', windowsImage: 'win:1', debug: false }, '0.1.0', {});
  assert.equal(both.windowsImage, 'win:1');
  assert.equal(both.windowsFrom, '--windows-image');
  // Only --windows-image: Linux still from the chart.
  const win = await captureImages(api, { windowsImage: 'win:1', debug: false }, '0.1.0', {});
  assert.equal(win.linuxImage, 'reg/rt:2');
  assert.equal(win.windowsImage, 'win:1');
});

test("Retina's --debug with RETINA_AGENT_IMAGE still works; the env alone does not", async () => {
  const api = fakeApi([]);
  const d = await captureImages(api, { debug: true }, '0.1.0', { RETINA_AGENT_IMAGE: 'dbg:1' });
  assert.equal(d.linuxImage, 'dbg:1');
  assert.equal(d.linuxFrom, '--debug and RETINA_AGENT_IMAGE');
  const n = await captureImages(api, { debug: false }, '0.1.0', { RETINA_AGENT_IMAGE: 'dbg:1' });
  assert.equal(n.linuxImage, 'ghcr.io/retina-ts/retina-ts:0.1.0');
});

test('no chart release, or listing DaemonSets refused: the built-in default, last', async () => {
  for (const api of [fakeApi([]), fakeApi(new ApiError(403, 'Forbidden', 'daemonsets.apps is forbidden'))]) {
    assert.deepEqual(await captureImages(api, { debug: false }, '0.1.0', {}), {
      linuxImage: 'ghcr.io/retina-ts/retina-ts:0.1.0', windowsImage: 'ghcr.io/retina-ts/retina-ts-windows:0.1.0', linuxFrom: 'default', windowsFrom: 'default',
    });
  }
  // Any other failure is not hidden.
  await assert.rejects(captureImages(fakeApi(new ApiError(500, 'InternalError', 'etcd down')), { debug: false }, '0.1.0', {}), /etcd down/);
});

test('two releases: the first by namespace/name wins, deterministically; Retina-named container accepted', async () => {
  const api = fakeApi([ds('zz', 'retina-agent-linux', 'linux', 'reg/rt:9'), ds('aa', 'retina-agent-linux', 'linux', 'reg/rt:1', 'retina')]);
  const i = await captureImages(api, { debug: false }, '0.1.0', {});
  assert.equal(i.linuxImage, 'reg/rt:1');
  assert.equal(i.linuxFrom, 'daemonset aa/retina-agent-linux');
  assert.equal(i.windowsFrom, 'default');
});
