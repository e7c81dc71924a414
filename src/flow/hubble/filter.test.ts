/**
 * Hubble's FlowFilter semantics, field by field, from cilium/cilium pkg/hubble/filters (its own test
 * cases where they exist), plus allow/deny combinations and errors that name the field.
 */
import assert from 'node:assert/strict';
import { isIPv4 } from 'node:net';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { compileFlowFilters as compileWith, FilterError, type HubbleFlow } from './filter.js';
import { cidrsContain, isIP, parseCidr } from './filter-ip.js';
import { compileSelector } from './filter-selector.js';
import { loadFlowEnums } from './enums.js';

/** flow.proto's enums, as the server hands them to the filter. */
const ENUMS = loadFlowEnums(fileURLToPath(new URL('../../../../proto/hubble', import.meta.url)));
const compileFlowFilters = (w: unknown, b: unknown): ReturnType<typeof compileWith> => compileWith(w, b, ENUMS);

/** Whether `flow` passes a whitelist of one filter. */
const passes = (filter: Record<string, unknown>, flow: HubbleFlow): boolean => compileFlowFilters([filter], undefined).match(flow);

/** Asserts each [flow, expected] row against one filter. */
function table(filter: Record<string, unknown>, rows: [HubbleFlow, boolean][]): void {
  const m = compileFlowFilters([filter], []);
  rows.forEach(([flow, want], i) => assert.equal(m.match(flow), want, `row ${i}: ${JSON.stringify(flow)} with ${JSON.stringify(filter)}`));
}

function throwsField(w: unknown, b: unknown, field: string, text?: RegExp): void {
  assert.throws(
    () => compileFlowFilters(w, b),
    (e: unknown) => {
      assert.ok(e instanceof FilterError, `not a FilterError: ${String(e)}`);
      assert.equal(e.field, field);
      assert.ok(e.message.startsWith(`${field}: `), e.message);
      if (text) assert.match(e.message, text);
      return true;
    },
  );
}

const ep = (namespace: string, pod_name: string, labels: string[] = []): Record<string, unknown> => ({ namespace, pod_name, labels });

describe('lists', () => {
  const dropped = { verdict: 'DROPPED' };
  const forwarded = { verdict: 'FORWARDED' };
  test('no filters: everything passes', () => {
    assert.equal(compileFlowFilters(undefined, undefined).match(dropped), true);
    assert.equal(compileFlowFilters([], null).match({}), true);
  });
  test('whitelist: any filter; blacklist: none may match', () => {
    const m = compileFlowFilters([{ verdict: ['DROPPED'] }, { verdict: ['AUDIT'] }], [{ source_pod: ['kube-system/'] }]);
    assert.equal(m.match(dropped), true);
    assert.equal(m.match({ verdict: 'AUDIT' }), true);
    assert.equal(m.match(forwarded), false);
    assert.equal(m.match({ ...dropped, source: ep('kube-system', 'coredns-1') }), false);
    assert.equal(m.match({ ...dropped, source: ep('default', 'web') }), true);
  });
  test('blacklist only', () => {
    const m = compileFlowFilters(undefined, [{ verdict: ['DROPPED'] }]);
    assert.equal(m.match(dropped), false);
    assert.equal(m.match(forwarded), true);
  });
  test('fields of one filter AND, values of one field OR', () => {
    const m = compileFlowFilters([{ verdict: ['DROPPED', 'ERROR'], source_pod: ['default/web'] }], []);
    assert.equal(m.match({ verdict: 'DROPPED', source: ep('default', 'web-1') }), true);
    assert.equal(m.match({ verdict: 'ERROR', source: ep('default', 'web-1') }), true);
    assert.equal(m.match({ verdict: 'DROPPED', source: ep('default', 'db-1') }), false);
    assert.equal(m.match({ verdict: 'FORWARDED', source: ep('default', 'web-1') }), false);
  });
  test('hubble observe --pod default/web --verdict DROPPED (source or destination)', () => {
    const m = compileFlowFilters(
      [
        { source_pod: ['default/web'], verdict: ['DROPPED'] },
        { destination_pod: ['default/web'], verdict: ['DROPPED'] },
      ],
      [],
    );
    assert.equal(m.match({ verdict: 'DROPPED', destination: ep('default', 'web-7') }), true);
    assert.equal(m.match({ verdict: 'DROPPED', source: ep('default', 'web-7') }), true);
    assert.equal(m.match({ verdict: 'DROPPED', source: ep('default', 'api') }), false);
  });
  test('empty repeated fields are absent', () => {
    assert.equal(passes({ verdict: [], source_ip: [] }, {}), true);
  });
  test('enum numbers and names are the same value', () => {
    assert.equal(passes({ verdict: [2] }, { verdict: 'DROPPED' }), true);
    assert.equal(passes({ verdict: ['DROPPED'] }, { verdict: 2 }), true);
  });
});

describe('fields', () => {
  test('uuid', () => table({ uuid: ['a', 'b'] }, [[{ uuid: 'a' }, true], [{ uuid: 'c' }, false], [{}, false]]));

  test('source_ip / destination_ip: exact text and CIDRs', () => {
    table({ source_ip: ['1.1.1.1', '10.0.0.0/8', 'fd00::/16'] }, [
      [{ IP: { source: '1.1.1.1' } }, true],
      [{ IP: { source: '10.200.3.4' } }, true],
      [{ IP: { source: '11.0.0.1' } }, false],
      [{ IP: { source: 'fd00:1::5' } }, true],
      [{ IP: { source: 'fe80::1' } }, false],
      [{ IP: { source: '::ffff:10.1.2.3' } }, true], // IPv4-mapped is inside an IPv4 CIDR (Go's Contains)
      [{ IP: { destination: '1.1.1.1' } }, false],
      [{}, false],
    ]);
    table({ destination_ip: ['2001:db8::1'] }, [
      [{ IP: { destination: '2001:db8::1' } }, true],
      [{ IP: { destination: '2001:0db8::1' } }, false], // Hubble compares exact addresses as text
    ]);
  });

  test('source_pod / destination_pod: [namespace/][prefix], bare name means default/', () => {
    table({ source_pod: ['xwing', 'kube-system/coredns-'] }, [
      [{ source: ep('default', 'xwing') }, true],
      [{ source: ep('default', 'xwing-123') }, true],
      [{ source: ep('other', 'xwing') }, false],
      [{ source: ep('kube-system', 'coredns-abc') }, true],
      [{ source: ep('kube-system', 'kube-proxy') }, false],
      [{ destination: ep('default', 'xwing') }, false],
      [{}, false],
    ]);
    table({ destination_pod: ['kube-system/'] }, [
      [{ destination: ep('kube-system', 'anything') }, true],
      [{ destination: ep('default', 'anything') }, false],
    ]);
    // "/name" is the empty namespace: only endpoints without one (and with a name).
    table({ source_pod: ['/web'] }, [
      [{ source: ep('', 'web') }, true],
      [{ source: ep('default', 'web') }, false],
    ]);
  });

  test('source_service / destination_service', () => {
    table({ destination_service: ['default/api'] }, [
      [{ destination_service: { namespace: 'default', name: 'api-v2' } }, true],
      [{ destination_service: { namespace: 'prod', name: 'api' } }, false],
      [{}, false],
    ]);
  });

  test('source_label: Hubble label filter cases', () => {
    const f = (labels: string[] | undefined): HubbleFlow => ({ source: { labels } });
    table({ source_label: ['label1', 'label2'] }, [
      [f(['label1']), true],
      [f(['label1=val1']), true],
      [f(['label2', 'label3', 'label4=val4']), true],
      [f(['label3']), false],
    ]);
    table({ source_label: ['label1=val1', 'label2=val2'] }, [
      [f(['label1']), false],
      [f(['label1=val1']), true],
      [f(['label1=val2', 'label2=val1', 'label3']), false],
      [f(['label2=val2', 'label3']), true],
      [f(['label3=val1']), false],
      [f(['']), false],
      [f(undefined), false],
      [f(['label1=val1=toomuch']), false],
    ]);
    table({ source_label: ['label1 in (val1, val2), label3 notin ()'] }, [
      [f(['label1']), false],
      [f(['label1=val1']), true],
      [f(['label1=val2', 'label2=val1', 'label3=val3']), true],
      [f(['label2=val2', 'label3']), false],
      [f(['label1=val1', 'label3=val3']), true],
    ]);
    table({ source_label: [''] }, [
      [f(['src1']), true],
      [f(undefined), true],
    ]);
    table({ source_label: ['k8s:app=bar', 'foo', 'reserved:host'] }, [
      [f(['k8s:app=bar']), true],
      [f(['k8s:foo=baz']), true],
      [f(['k8s.app=bar']), false],
      [f(['container:foo=bar', 'reserved:host']), true],
    ]);
    table({ source_label: ['any:key'] }, [
      [f(['key']), true],
      [f(['reserved:key']), true],
      [f(['any.key']), false],
    ]);
  });

  test('label selectors: operators', () => {
    const sel = (s: string, labels: string[]): boolean => compileSelector(s).matches(labels);
    assert.equal(sel('k8s:app!=web', ['k8s:app=web']), false);
    assert.equal(sel('k8s:app!=web', ['k8s:app=db']), true);
    assert.equal(sel('k8s:app!=web', []), true);
    assert.equal(sel('!k8s:app', ['k8s:app=web']), false);
    assert.equal(sel('!app', ['k8s:other=1']), true);
    assert.equal(sel('app==web', ['k8s:app=web']), true);
    assert.equal(sel('tier notin (a,b)', ['k8s:tier=c']), true);
    assert.equal(sel('tier notin (a,b)', ['k8s:tier=a']), false);
    assert.equal(sel('k8s:replicas>2', ['k8s:replicas=3']), true);
    assert.equal(sel('k8s:replicas>2', ['k8s:replicas=2']), false);
    assert.equal(sel('k8s:replicas<2', ['k8s:replicas=x']), false);
    assert.equal(sel('k8s:app.kubernetes.io/name=web', ['k8s:app.kubernetes.io/name=web']), true);
    assert.equal(sel('k8s:io.kubernetes.pod.namespace=default', ['k8s:io.kubernetes.pod.namespace=default']), true);
    assert.equal(sel('reserved:host', ['$host']), true);
    assert.equal(sel('reserved:world', ['reserved.world']), true);
    assert.equal(sel('unspec:plain', ['plain']), true);
  });

  test('destination_label, both sides', () => {
    table({ source_label: ['src1, src2=val2'], destination_label: ['dst1, dst2=val2'] }, [
      [{ source: { labels: ['src1', 'src2=val2'] }, destination: { labels: ['dst1', 'dst2=val2'] } }, true],
      [{ source: { labels: ['label1=val1'] } }, false],
      [{ destination: { labels: ['dst1', 'dst2=val2'] } }, false],
      [{ source: { labels: ['src1'] }, destination: { labels: ['dst1'] } }, false],
    ]);
  });

  test('source_workload / destination_workload', () => {
    const f = (workloads: unknown[] | undefined): HubbleFlow => ({ destination: { workloads } });
    table({ destination_workload: [{ name: 'web' }, { kind: 'DaemonSet' }] }, [
      [f([{ name: 'web', kind: 'Deployment' }]), true],
      [f([{ name: 'agent', kind: 'DaemonSet' }]), true],
      [f([{ name: 'db', kind: 'StatefulSet' }]), false],
      [f(undefined), false],
    ]);
    table({ source_workload: [{ name: 'web', kind: 'Deployment' }] }, [
      [{ source: { workloads: [{ name: 'web', kind: 'StatefulSet' }] } }, false],
      [{ source: { workloads: [{ name: 'web', kind: 'Deployment' }] } }, true],
    ]);
  });

  test('verdict, traffic_direction, ip_version (absent = the zero value)', () => {
    table({ verdict: ['FORWARDED', 'DROPPED'] }, [
      [{ verdict: 'DROPPED' }, true],
      [{ verdict: 'AUDIT' }, false],
      [{}, false],
    ]);
    table({ verdict: ['VERDICT_UNKNOWN'] }, [[{}, true]]);
    table({ traffic_direction: ['INGRESS'] }, [
      [{ traffic_direction: 'INGRESS' }, true],
      [{ traffic_direction: 'EGRESS' }, false],
      [{}, false],
    ]);
    table({ ip_version: ['IPv6'] }, [
      [{ IP: { ipVersion: 'IPv6' } }, true],
      [{ IP: { ipVersion: 'IPv4' } }, false],
      [{}, false],
    ]);
  });

  test('drop_reason_desc: only on DROPPED flows', () => {
    table({ drop_reason_desc: ['POLICY_DENIED', 'CT_MAP_INSERTION_FAILED'] }, [
      [{ verdict: 'DROPPED', drop_reason_desc: 'POLICY_DENIED' }, true],
      [{ verdict: 'DROPPED', drop_reason_desc: 155 }, true],
      [{ verdict: 'FORWARDED', drop_reason_desc: 'POLICY_DENIED' }, false],
      [{ verdict: 'DROPPED', drop_reason_desc: 'FIB_LOOKUP_FAILED' }, false],
    ]);
  });

  test('event_type: type 0 is any, sub_type only with match_sub_type', () => {
    table({ event_type: [{ type: 1 }, { type: 4, match_sub_type: true, sub_type: 0 }] }, [
      [{ event_type: { type: 1, sub_type: 133 } }, true],
      [{ event_type: { type: 4 } }, true],
      [{ event_type: { type: 4, sub_type: 3 } }, false],
      [{ event_type: { type: 5 } }, false],
      [{}, false],
    ]);
    table({ event_type: [{}] }, [
      [{ event_type: { type: 9 } }, true],
      [{}, false],
    ]);
  });

  test('protocol: L4 oneof and L7 records; icmp is both ICMP versions', () => {
    const tcp = { l4: { TCP: { source_port: 1, destination_port: 80 }, protocol: 'TCP' } };
    const udp = { l4: { UDP: {}, protocol: 'UDP' } };
    const icmp6 = { l4: { ICMPv6: { type: 128 } } };
    const dns = { l4: { UDP: {} }, l7: { dns: { query: 'example.com.' }, record: 'dns' } };
    table({ protocol: ['TCP'] }, [[tcp, true], [udp, false], [{}, false]]);
    table({ protocol: ['icmp'] }, [[icmp6, true], [{ l4: { ICMPv4: {} } }, true], [tcp, false]]);
    table({ protocol: ['icmpv4'] }, [[icmp6, false]]);
    table({ protocol: ['dns'] }, [[dns, true], [udp, false]]);
    table({ protocol: ['udp', 'http'] }, [[dns, true], [tcp, false], [{ l7: { http: { code: 200 } } }, true]]);
  });

  test('source_port / destination_port: TCP, UDP or SCTP', () => {
    table({ destination_port: ['53', '080'] }, [
      [{ l4: { UDP: { destination_port: 53 } } }, true],
      [{ l4: { TCP: { destination_port: 80 } } }, true],
      [{ l4: { SCTP: { destination_port: 53 } } }, true],
      [{ l4: { TCP: { source_port: 53 } } }, false],
      [{ l4: { ICMPv4: {} } }, false],
      [{}, false],
    ]);
    table({ source_port: ['0'] }, [[{ l4: { TCP: {} } }, true]]); // an absent port is 0, as in Go
  });

  test('reply: unknown is not a match, except unknown on DROPPED reads as false', () => {
    table({ reply: [true] }, [
      [{ is_reply: { value: true } }, true],
      [{ is_reply: {} }, false],
      [{}, false],
      [{ verdict: 'DROPPED' }, false],
    ]);
    table({ reply: [false] }, [
      [{ is_reply: { value: false } }, true],
      [{ is_reply: {} }, true],
      [{ is_reply: { value: true } }, false],
      [{}, false],
      [{ verdict: 'DROPPED' }, true],
    ]);
  });

  test('dns_query: RE2 regexes, unanchored', () => {
    const q = (query: string): HubbleFlow => ({ l7: { dns: { query } } });
    table({ dns_query: ['kube.*local', '^ex'] }, [
      [q('kube-dns.kube-system.svc.cluster.local.'), true],
      [q('example.com.'), true],
      [q('www.example.com.'), false],
      [{ l7: {} }, false],
      [{}, false],
    ]);
  });

  test('tcp_flags: a filter entry matches when the flow has all its flags', () => {
    const fl = (flags: Record<string, boolean> | undefined): HubbleFlow => ({ l4: { TCP: { flags } } });
    table({ tcp_flags: [{ SYN: true }, { FIN: true, ACK: true }] }, [
      [fl({ SYN: true, ACK: true }), true],
      [fl({ FIN: true }), false],
      [fl({ FIN: true, ACK: true, PSH: true }), true],
      [fl(undefined), false],
      [{ l4: { UDP: {} } }, false],
    ]);
  });

  test('node_name: [cluster/]node patterns with *, bare names in cluster "default"', () => {
    const n = (node_name: string): HubbleFlow => ({ node_name });
    table({ node_name: ['k8s*'] }, [[n('k8s1'), true], [n('default/k8s1'), true], [n('other/k8s1'), true], [n('node1'), false], [{}, false]]);
    table({ node_name: ['default/'] }, [[n('node1'), true], [n('other/node1'), false]]);
    table({ node_name: ['cluster-a/*.domain.com'] }, [[n('cluster-a/n1.domain.com'), true], [n('cluster-b/n1.domain.com'), false], [n('n1.domain.com'), false]]);
    table({ node_name: ['Node1.'] }, [[n('node1'), true]]); // lowercased, one trailing dot trimmed
  });

  test('source_fqdn / destination_fqdn', () => {
    table({ destination_fqdn: ['*.cilium.io'] }, [
      [{ destination_names: ['docs.cilium.io'] }, true],
      [{ destination_names: ['cilium.io'] }, false],
      [{ source_names: ['docs.cilium.io'] }, false],
      [{}, false],
    ]);
  });

  test('fields our flows never carry match nothing, as in Hubble', () => {
    const plain: HubbleFlow = { verdict: 'FORWARDED', source: ep('default', 'web'), l4: { TCP: {} } };
    for (const f of [
      { http_status_code: ['4+'] },
      { http_method: ['GET'] },
      { http_path: ['/api'] },
      { http_url: ['.*'] },
      { http_header: [{ key: 'a', value: 'b' }] },
      { source_identity: [7] },
      { trace_id: ['abc'] },
      { source_cluster_name: ['c1'] },
    ]) {
      assert.equal(passes(f, plain), false, JSON.stringify(f));
      assert.equal(compileFlowFilters(undefined, [f]).match(plain), true, `blacklist ${JSON.stringify(f)}`);
    }
    // ...and behave as Hubble when the data is there.
    table({ http_status_code: ['4+', '200'] }, [
      [{ l7: { http: { code: 404 } } }, true],
      [{ l7: { http: { code: 200 } } }, true],
      [{ l7: { http: { code: 201 } } }, false],
    ]);
    table({ http_path: ['^/api/'] }, [
      [{ l7: { http: { url: 'http://x/api/v1?q=1' } } }, true],
      [{ l7: { http: { url: '/api/v1' } } }, true],
      [{ l7: { http: { url: '/web' } } }, false],
    ]);
    table({ source_identity: [0] }, [[{ source: {} }, true], [{}, false]]);
  });
});

describe('errors name the field', () => {
  test('bad values', () => {
    throwsField([{ source_ip: ['1.2.3.4', 'x'] }], [], 'whitelist[0].source_ip[1]', /"x" is not an IP or CIDR/);
    throwsField([], [{ verdict: ['DROPPED'] }, { destination_ip: ['10.0.0.0/33'] }], 'blacklist[1].destination_ip[0]');
    throwsField([{ source_ip: ['01.2.3.4'] }], [], 'whitelist[0].source_ip[0]'); // Go rejects leading zeros
    throwsField([{ source_pod: [''] }], [], 'whitelist[0].source_pod[0]');
    throwsField([{ source_label: ['()'] }], [], 'whitelist[0].source_label[0]', /label selector/);
    throwsField([{ destination_label: ['='] }], [], 'whitelist[0].destination_label[0]');
    throwsField([{ source_label: ['any:k8s:bla'] }], [], 'whitelist[0].source_label[0]');
    throwsField([{ verdict: ['MAYBE'] }], [], 'whitelist[0].verdict[0]', /not a verdict/);
    throwsField([{ protocol: ['tcp', 'quic'] }], [], 'whitelist[0].protocol[1]', /unknown protocol/);
    throwsField([{ destination_port: ['65536'] }], [], 'whitelist[0].destination_port[0]');
    throwsField([{ source_port: ['-1'] }], [], 'whitelist[0].source_port[0]');
    throwsField([{ dns_query: ['(a)\\1'] }], [], 'whitelist[0].dns_query[0]', /RE2/);
    throwsField([{ dns_query: ['(?=x)'] }], [], 'whitelist[0].dns_query[0]');
    throwsField([{ node_name: ['a/b/c'] }], [], 'whitelist[0].node_name[0]', /too many slashes/);
    throwsField([{ node_name: ['n@de'] }], [], 'whitelist[0].node_name[0]', /invalid rune/);
    throwsField([{ destination_fqdn: ['a..'] }], [], 'whitelist[0].destination_fqdn[0]', /trailing dots/);
    throwsField([{ http_status_code: ['600'] }], [], 'whitelist[0].http_status_code[0]');
    throwsField([{ http_method: ['GET'], event_type: [{ type: 1 }] }], [], 'whitelist[0].http_method', /l7/);
    throwsField([{ source_cluster_name: [''] }], [], 'whitelist[0].source_cluster_name[0]');
    throwsField([{ tcp_flags: [{ SYN: 'yes' }] }], [], 'whitelist[0].tcp_flags[0].SYN');
  });
  test('bad shapes', () => {
    throwsField({}, [], 'whitelist', /list of FlowFilter/);
    throwsField([], 'x', 'blacklist');
    throwsField([7], [], 'whitelist[0]');
    throwsField([{ source_ip: '1.2.3.4' }], [], 'whitelist[0].source_ip', /list of strings/);
    throwsField([{ source_ip: [1] }], [], 'whitelist[0].source_ip[0]');
    throwsField([{ bogus: ['x'] }], [], 'whitelist[0].bogus', /not a FlowFilter field/);
    const sparse: unknown[] = [];
    sparse[1] = 'default/web';
    throwsField([{ source_pod: sparse }], [], 'whitelist[0].source_pod[0]', /must be a string/);
    const sparseList: unknown[] = [];
    sparseList[1] = { verdict: ['DROPPED'] };
    throwsField(sparseList, [], 'whitelist[0]', /FlowFilter/);
  });
  test('fields this agent cannot answer are refused, not ignored', () => {
    throwsField([{ node_labels: ['a=b'] }], [], 'whitelist[0].node_labels', /not supported/);
    throwsField([], [{ interface: [{ name: 'eth0' }] }], 'blacklist[0].interface', /not supported/);
    throwsField([{ experimental: { cel_expression: ['true'] } }], [], 'whitelist[0].experimental.cel_expression', /CEL/);
    assert.equal(compileFlowFilters([{ experimental: {} }], []).match({}), true);
  });
});

describe('IP parsing (Go net.ParseIP / ParseCIDR)', () => {
  test('addresses', () => {
    for (const ok of ['0.0.0.0', '255.255.255.255', '::', '::1', '1::', 'fe80::1:2', '1:2:3:4:5:6:7:8', '::ffff:1.2.3.4', '1:2:3:4:5:6:1.2.3.4', '::1:2:3:4:5:6:7']) {
      assert.equal(isIP(ok), true, ok);
    }
    for (const bad of ['', '1.2.3', '1.2.3.4.5', '256.1.1.1', '01.1.1.1', '1.1.1.1 ', ':::', '1:2:3:4:5:6:7:8:9', '1::2::3', '1:2:3:4:5:6:7:8::', 'fe80::1%eth0', '12345::', '1:2:3:4:5:6:7:1.2.3.4', 'g::1', ':1', '1:']) {
      assert.equal(isIP(bad), false, bad);
    }
  });
  test('every IPv6 text form parses to the address its canonical form names', () => {
    fc.assert(
      fc.property(fc.ipV6(), (ip) => {
        assert.equal(isIP(ip), true, ip);
        const canon = new URL(`http://[${ip}]/`).hostname.slice(1, -1);
        const mapped = /^::ffff:[0-9a-f]+:[0-9a-f]+$/.test(canon);
        if (mapped) return; // has an IPv4 form: checked against IPv4 CIDRs below
        assert.equal(cidrsContain([parseCidr(`${canon}/128`)!], ip), true, `${ip} vs ${canon}`);
        assert.equal(cidrsContain([parseCidr(`${canon}/127`)!], ip), true);
      }),
      { seed: 17, numRuns: 300 },
    );
    fc.assert(
      fc.property(fc.ipV4(), fc.integer({ min: 0, max: 32 }), (ip, bits) => {
        assert.equal(isIP(ip), isIPv4(ip));
        assert.equal(cidrsContain([parseCidr(`${ip}/${bits}`)!], ip), true);
        assert.equal(cidrsContain([parseCidr(`${ip}/${bits}`)!], `::ffff:${ip}`), true);
      }),
      { seed: 18, numRuns: 300 },
    );
  });
  test('CIDRs', () => {
    assert.equal(parseCidr('10.0.0.0/33'), undefined);
    assert.equal(parseCidr('10.0.0.0/'), undefined);
    assert.equal(parseCidr('10.0.0.0/+8'), undefined);
    assert.equal(parseCidr('::/129'), undefined);
    const c = (s: string): ReturnType<typeof parseCidr> & object => parseCidr(s)!;
    assert.equal(cidrsContain([c('10.1.2.3/8')], '10.255.0.1'), true); // host bits are masked
    assert.equal(cidrsContain([c('0.0.0.0/0')], '8.8.8.8'), true);
    assert.equal(cidrsContain([c('0.0.0.0/0')], '::1'), false);
    assert.equal(cidrsContain([c('::/0')], '1.2.3.4'), false);
    assert.equal(cidrsContain([c('::/0')], '::1'), true);
    assert.equal(cidrsContain([c('2001:db8::/33')], '2001:db8:7fff::1'), true);
    assert.equal(cidrsContain([c('2001:db8::/33')], '2001:db8:8000::1'), false);
    assert.equal(cidrsContain([c('::ffff:0:0/96')], '::ffff:1.2.3.4'), false); // Go: the address becomes 4 bytes
    assert.equal(cidrsContain([c('192.168.1.0/24')], '192.168.1.255'), true);
    assert.equal(cidrsContain([c('192.168.1.0/24')], '192.168.2.0'), false);
  });
});
