import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { NotifyingStore, compactRv, splitStoreKey } from './store.js';

describe('NotifyingStore', () => {
  it('keeps namespaced and cluster-scoped entries apart and gives their keys back joined', () => {
    const s = new NotifyingStore<{ v: number }>('test');
    s.upsert('ns1/a', { rv: 1, value: { v: 1 } }, 'a');
    s.upsert('ns2/a', { rv: 2, value: { v: 2 } });
    s.upsert('a', { rv: 3, value: { v: 3 } }, 'a');
    assert.equal(s.size, 3);
    assert.deepEqual(s.get('ns1/a')?.value, { v: 1 });
    assert.deepEqual(s.get('ns2/a')?.value, { v: 2 });
    assert.deepEqual(s.get('a')?.value, { v: 3 });
    assert.equal(s.get('ns3/a'), undefined);
    assert.deepEqual(s.keys().sort(), ['a', 'ns1/a', 'ns2/a']);
    assert.deepEqual([...s.entries()].map(([k, e]) => [k, e.rv]).sort(), [['a', 3], ['ns1/a', 1], ['ns2/a', 2]]);
    s.delete('ns1/a');
    s.delete('ns1/a');
    assert.equal(s.size, 2);
    assert.deepEqual(s.keys().sort(), ['a', 'ns2/a']);
  });

  it('tells handlers the joined key; an unchanged resourceVersion or an equal value notifies no one', () => {
    const s = new NotifyingStore<{ v: number }>('test');
    const seen: string[] = [];
    s.subscribe({ added: (k, o) => seen.push(`+${k}=${o.v}`), updated: (k, o, old) => seen.push(`~${k}=${old.v}>${o.v}`), deleted: (k) => seen.push(`-${k}`) }, true);
    s.upsert('ns/a', { rv: 5, value: { v: 1 } }, 'a');
    s.upsert('ns/a', { rv: 5, value: { v: 9 } }, 'a'); // same resourceVersion
    s.upsert('ns/a', { rv: 6, value: { v: 1 } }, 'a'); // equal value
    s.upsert('ns/a', { rv: 7, value: { v: 2 } }, 'a');
    s.upsert('node-1', { rv: 'x', value: { v: 3 } });
    s.retainOnly(new Set(['node-1']));
    assert.deepEqual(seen, ['+ns/a=1', '~ns/a=1>2', '+node-1=3', '-ns/a']);
    const replayed: string[] = [];
    s.subscribe({ added: (k) => replayed.push(k) }, true);
    assert.deepEqual(replayed, ['node-1']);
  });

  it('keeps a decimal resourceVersion as a number, anything else as sent', () => {
    assert.equal(compactRv('12345'), 12345);
    assert.equal(compactRv('0'), 0);
    assert.equal(compactRv('999999999999999'), 999999999999999);
    assert.equal(compactRv('9999999999999999'), '9999999999999999'); // past 2^53's 15 safe digits
    assert.equal(compactRv('0123'), '0123');
    assert.equal(compactRv('12a'), '12a');
    assert.equal(compactRv(''), '');
    assert.equal(compactRv(undefined), '');
    assert.deepEqual(splitStoreKey('ns/name'), ['ns', 'name']);
    assert.deepEqual(splitStoreKey('node'), ['', 'node']);
  });
});
