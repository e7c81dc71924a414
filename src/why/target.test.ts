import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseTarget, targetText, TargetSpecError } from './target.js';

describe('why: SRC and DST as typed', () => {
  const p = (s: string, port = true) => parseTarget(s, 'DST', 'dflt', port);
  it('pods, Services, IPs and names, with a port', () => {
    assert.deepEqual(p('shop/web-1'), { kind: 'pod', namespace: 'shop', name: 'web-1' });
    assert.deepEqual(p('pod/shop/web-1:8080'), { kind: 'pod', namespace: 'shop', name: 'web-1', port: 8080 });
    assert.deepEqual(p('web-1'), { kind: 'pod', namespace: 'dflt', name: 'web-1' });
    assert.deepEqual(p('po/web-1'), { kind: 'pod', namespace: 'dflt', name: 'web-1' });
    assert.deepEqual(p('svc/shop/web:80'), { kind: 'service', namespace: 'shop', name: 'web', port: 80 });
    assert.deepEqual(p('service/web'), { kind: 'service', namespace: 'dflt', name: 'web' });
    assert.deepEqual(p('10.0.0.1:443'), { kind: 'ip', ip: '10.0.0.1', port: 443 });
    assert.deepEqual(p('fd00::1'), { kind: 'ip', ip: 'fd00::1' });
    assert.deepEqual(p('[fd00::1]:53'), { kind: 'ip', ip: 'fd00::1', port: 53 });
    assert.deepEqual(p('Web.Shop.svc.cluster.local.:80'), { kind: 'name', name: 'web.shop.svc.cluster.local', port: 80 });
    assert.equal(targetText(p('svc/shop/web:80')), 'service shop/web port 80');
  });
  it('bad ones name the argument', () => {
    assert.throws(() => p('shop/web:99999'), /DST: port "99999" is not a number from 1 to 65535/);
    assert.throws(() => p('deploy/shop/web'), /DST: "deploy" is not pod or svc/);
    assert.throws(() => p('Shop/Web'), /DST: "Shop" is not a Kubernetes name/);
    assert.throws(() => p('a/b/c/d'), /too many slashes/);
    assert.throws(() => parseTarget('shop/web:80', 'SRC', 'dflt', false), (e: unknown) => e instanceof TargetSpecError && /SRC: only the destination takes a :PORT/.test(e.message));
    assert.throws(() => p(''), /DST is empty/);
  });
});
