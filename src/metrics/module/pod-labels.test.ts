/**
 * metricsPodLabelsAllowlist on adv_* series: the labels each side gets, and what they do to the
 * number of series (docs/metrics.md "Pod labels on metrics"): with `podname` in a side's context a
 * pod's labels add no series (one pod, one value per key); without it the series of a side are at
 * most the distinct combinations of its context and label values, and never more than the series
 * budget (the rest folds into the overflow series).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createFlow, type Endpoint, type Flow } from '../../flow/index.js';
import { podLabelName } from '../../config/index.js';
import { createMetricsRegistry } from '../registry.js';
import { createMetricsModule } from './index.js';
import { specOf } from '../../../test/fakes/metrics-spec.js';

const pod = (i: number, labels: Record<string, string>): Endpoint => ({
  namespace: 'shop', podName: `web-${i}`, workloadKind: 'Deployment', workloadName: 'web', service: '', nodeName: 'node-1', zone: '', labels,
});
const db: Endpoint = { namespace: 'data', podName: 'db-0', workloadKind: 'StatefulSet', workloadName: 'db', service: '', nodeName: 'node-1', zone: '', labels: { team: 'blue', app: 'db' } };

const fwd = (src: Endpoint, i: number, over: Partial<Flow> = {}): Flow => createFlow({
  srcIp: `10.0.${i >> 8}.${i & 255}`, dstIp: '10.9.0.1', verdict: 'FORWARDED', proto: 6, srcPort: 40000, dstPort: 5432, packets: 1, bytes: 100,
  direction: 'EGRESS', observationPoint: 'FROM_ENDPOINT', source: src, destination: db, ...over,
});

function setup(remoteContext: boolean, contextOptions: unknown[], keys: string[], maxSeriesPerMetric = 50_000) {
  const metrics = createMetricsRegistry({ processMetrics: false });
  const mod = createMetricsModule({ metrics, remoteContext, nodeName: 'node-1', maxSeriesPerMetric, podLabels: keys.map((key) => ({ key, name: podLabelName(key) })) });
  mod.apply(specOf({ namespaces: { exclude: [] }, contextOptions }));
  const lines = async (name: string): Promise<string[]> => (await metrics.expose()).body.split('\n').filter((l) => l.startsWith(name + '{'));
  return { mod, lines };
}

describe('metricsPodLabelsAllowlist on adv_*', () => {
  it('remote context: source_label_<key> and destination_label_<key> after each side\'s endpoint labels, before ip', async () => {
    const { mod, lines } = setup(true, [{ metricName: 'forward_count', sourceLabels: ['podname', 'ip'], destinationLabels: ['namespace'] }], ['team', 'app.kubernetes.io/name']);
    mod.consume({ source: 't', flows: [fwd(pod(1, { team: 'red', 'app.kubernetes.io/name': 'store' }), 1)] });
    assert.deepEqual(await lines('networkobservability_adv_forward_count'), [
      'networkobservability_adv_forward_count{direction="EGRESS",source_podname="web-1",source_label_team="red",source_label_app_kubernetes_io_name="store",source_ip="10.0.0.1",'
      + 'destination_namespace="data",destination_label_team="blue",destination_label_app_kubernetes_io_name=""} 1',
    ]);
  });

  it('local context: label_<key> of the pod; a side without context labels gets none', async () => {
    const { mod, lines } = setup(false, [{ metricName: 'forward_count', sourceLabels: ['podname'] }, { metricName: 'drop_count' }], ['team']);
    mod.consume({ source: 't', flows: [fwd(pod(1, { team: 'red' }), 1), fwd(pod(1, { team: 'red' }), 1, { verdict: 'DROPPED', dropReason: 'NO_SOCKET' })] });
    assert.ok((await lines('networkobservability_adv_forward_count')).some((l) => l.includes('podname="web-1",label_team="red"')));
    assert.ok((await lines('networkobservability_adv_drop_count')).every((l) => !l.includes('label_team')), 'drop_count has no context labels: no pod labels either');
  });

  it('cardinality: with podname, labels add no series; without it, at most the distinct values, and never past the budget', async () => {
    const teams = ['red', 'blue', 'green'];
    const pods = Array.from({ length: 300 }, (_, i) => pod(i, { team: teams[i % 3] as string, version: `v${i % 7}` }));
    const flows = pods.map((p, i) => fwd(p, i));

    const byPod = setup(true, [{ metricName: 'forward_count', sourceLabels: ['podname'] }], ['team', 'version']);
    byPod.mod.consume({ source: 't', flows });
    const plain = setup(true, [{ metricName: 'forward_count', sourceLabels: ['podname'] }], []);
    plain.mod.consume({ source: 't', flows });
    assert.equal((await byPod.lines('networkobservability_adv_forward_count')).length, (await plain.lines('networkobservability_adv_forward_count')).length);
    assert.equal((await byPod.lines('networkobservability_adv_forward_count')).length, 300);

    const byNs = setup(true, [{ metricName: 'forward_count', sourceLabels: ['namespace'] }], ['team', 'version']);
    byNs.mod.consume({ source: 't', flows });
    // 3 teams × 7 versions, one namespace: 21 combinations (not 300).
    assert.equal((await byNs.lines('networkobservability_adv_forward_count')).length, 21);

    const capped = setup(true, [{ metricName: 'forward_count', sourceLabels: ['namespace'] }], ['team', 'version'], 10);
    capped.mod.consume({ source: 't', flows });
    const l = await capped.lines('networkobservability_adv_forward_count');
    assert.equal(l.length, 11, 'ten series and the overflow series');
    assert.ok(l.some((x) => x.includes('source_label_team="overflow"')));
  });
});
