/**
 * The decoders read what the C writes: every record and map value the agent decodes is built here
 * at the offsets the compiled object's BTF gives (native-linux/<name>/<name>.bpf.o, `make build`),
 * with a distinct value per field, and decoded by the plugin's own decoder. A field moved on either
 * side (the struct in C, an offset or a size constant in TypeScript) fails here; so does a field
 * added in C until this test says whether the agent reads it.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { kernelClock } from '../../src/plugins/linux/ebpf-shared/clock.js';
import { DNS_EVENT_HEADER, PACKET_OUTGOING, decodeDnsEvent } from '../../src/plugins/linux/dns/decode.js';
import { dnsFrame, dnsQuery } from '../../src/plugins/linux/dns/fixtures.js';
import { DROP_EVENT_SIZE, DROP_KEY_SIZE, createDropDecoder, decodeDropKey } from '../../src/plugins/linux/dropreason/decode.js';
import { PACKET_EVENT_SIZE, createPacketDecoder } from '../../src/plugins/linux/packetparser/decode.js';
import { CT_VALUE_SIZE, SWEEP_RESULT_SIZE, decodeSweepResult } from '../../src/plugins/linux/packetparser/maps.js';
import { RAW_PARTITION_KEY } from '../../src/plugins/linux/packetparser/raw-decoder.js';
import { RETRANS_EVENT_SIZE, createRetransDecoder, decodeRetrans } from '../../src/plugins/linux/tcpretrans/decode.js';
import { offsets, recordAt, structLayout } from './btf.js';

const AT = 8; // records sit at an 8-byte offset in the ring, not at 0
const clock = kernelClock(1000); // wall-clock ms = 1000 + ns / 1e6
const SRC4 = [10, 1, 2, 3];
const DST4 = [10, 4, 5, 6];
const SRC6 = [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xab, 0xcd];
const BIG = 2 ** 33 + 7; // a u64 whose high half matters

describe('packetparser: struct packet_event', () => {
  const layout = structLayout('packetparser', 'packet_event');
  const values = {
    ts_ns: 7_000_000_000, saddr: SRC4, daddr: DST4, sport: 40001, dport: 8080, family: 4, proto: 6,
    obs_point: 2, direction: 1, is_reply: 1, tcp_flags: 0x112, packets: 3, bytes: BIG, tsval: 11, tsecr: 12,
    flag_counts: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
  };
  const unread = ['report_reason', 'ifindex', 'peer_hash'];

  it('is PACKET_EVENT_SIZE bytes', () => assert.equal(PACKET_EVENT_SIZE, layout.size));

  it('peer_hash is where the workers read their partition key (RAW_PARTITION_KEY)', () => {
    const f = layout.fields.get('peer_hash');
    assert.deepEqual(f && [f.offset, f.size], [RAW_PARTITION_KEY.offset, RAW_PARTITION_KEY.length]);
  });

  it('decodes every field from its BTF offset', () => {
    const f = createPacketDecoder({ clock })(recordAt(layout, AT, values, unread), AT, layout.size);
    assert.deepEqual(
      [f.timeMs, f.srcIp, f.dstIp, f.srcPort, f.dstPort, f.ipVersion, f.proto, f.observationPoint, f.direction, f.isReply],
      [8000, '10.1.2.3', '10.4.5.6', 40001, 8080, 4, 6, 'FROM_NETWORK', 'INGRESS', true],
    );
    assert.deepEqual([f.tcpFlags, f.packets, f.bytes, f.tcpTsval, f.tcpTsecr], [0x112, 3, BIG, 11, 12]);
    assert.deepEqual(f.tcpFlagCounts, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  });

  it('reads IPv6 addresses from the same fields', () => {
    const f = createPacketDecoder({ clock })(recordAt(layout, AT, { ...values, family: 6, saddr: SRC6 }, unread), AT, layout.size);
    assert.equal(f.srcIp, 'fd00::abcd');
    assert.equal(f.ipVersion, 6);
  });
});

describe('packetparser: map values', () => {
  it('struct pp_sweep_result decodes from its BTF offsets and is SWEEP_RESULT_SIZE bytes', () => {
    const layout = structLayout('packetparser', 'pp_sweep_result');
    assert.equal(SWEEP_RESULT_SIZE, layout.size);
    const v = recordAt(layout, 0, { packets_tx: BIG, packets_rx: 2, bytes_tx: 3, bytes_rx: 4, live: 5, expired: 6, reported: 7, lost: 8 });
    assert.deepEqual(decodeSweepResult(Buffer.from(v.buffer)), {
      packetsTx: BIG, packetsRx: 2, bytesTx: 3, bytesRx: 4, live: 5, expired: 6, reported: 7, lost: 8,
    });
  });

  it('struct pp_ct_value is CT_VALUE_SIZE bytes', () => {
    assert.equal(CT_VALUE_SIZE, structLayout('packetparser', 'pp_ct_value').size);
  });
});

describe('tcpretrans: struct retrans_event', () => {
  const layout = structLayout('tcpretrans', 'retrans_event');
  const values = { ts_ns: 2_000_000, saddr: SRC4, daddr: DST4, sport: 443, dport: 50000, family: 4, state: 1, tcp_flags: 0x18, segs: 2, len: 2896 };

  it('is RETRANS_EVENT_SIZE bytes, and ringbench writes the same struct', () => {
    assert.equal(RETRANS_EVENT_SIZE, layout.size);
    assert.deepEqual(structLayout('ringbench', 'retrans_event'), layout);
  });

  it('decodes every field from its BTF offset', () => {
    const v = recordAt(layout, AT, values, ['pad']);
    const r = decodeRetrans(v, AT, layout.size);
    assert.deepEqual(
      [r.tsNs, r.family, r.srcV4, r.dstV4, r.srcPort, r.dstPort, r.state, r.tcpFlags, r.segs, r.len],
      [2_000_000, 4, 0x0a010203, 0x0a040506, 443, 50000, 1, 0x18, 2, 2896],
    );
    const f = createRetransDecoder({ clock })(v, AT, layout.size);
    assert.deepEqual([f.timeMs, f.srcIp, f.dstIp, f.srcPort, f.dstPort, f.tcpFlags, f.packets, f.bytes], [1002, '10.1.2.3', '10.4.5.6', 443, 50000, 0x18, 2, 2896]);
    const six = decodeRetrans(recordAt(layout, AT, { ...values, family: 6, saddr: SRC6 }, ['pad']), AT, layout.size);
    assert.deepEqual([...(six.src6 ?? [])], SRC6);
  });
});

describe('dropreason: struct drop_event, drop_key, drop_value', () => {
  it('drop_event is DROP_EVENT_SIZE bytes and decodes every field from its BTF offset', () => {
    const layout = structLayout('dropreason', 'drop_event');
    assert.equal(DROP_EVENT_SIZE, layout.size);
    const v = recordAt(layout, AT, {
      ts_ns: 5_000_000, reason: 12, direction: 1, len: 1500,
      't.saddr': SRC4, 't.daddr': DST4, 't.sport': 1234, 't.dport': 53, 't.family': 4, 't.proto': 17, 't.tcp_flags': 0x02,
    }, ['ifindex', 't.pad']);
    const f = createDropDecoder({ clock, reasonName: (n) => `R${n}` })(v, AT, layout.size);
    assert.deepEqual(
      [f.timeMs, f.dropReason, f.direction, f.observationPoint, f.bytes, f.srcIp, f.dstIp, f.ipVersion, f.srcPort, f.dstPort, f.proto, f.tcpFlags],
      [1005, 'R12', 'INGRESS', 'FROM_NETWORK', 1500, '10.1.2.3', '10.4.5.6', 4, 1234, 53, 17, 0x02],
    );
  });

  it('drop_key is DROP_KEY_SIZE bytes and decodes from its BTF offsets', () => {
    const layout = structLayout('dropreason', 'drop_key');
    assert.equal(DROP_KEY_SIZE, layout.size);
    const v = recordAt(layout, 0, { reason: 77, direction: 2 });
    assert.deepEqual(decodeDropKey(new Uint8Array(v.buffer)), { reason: 77, direction: 2 });
  });

  // The agent sums map values as u64 columns (PerCpuReader.sum) and reads [0] as packets, [1] as bytes.
  it('drop_value and packetforward\'s fwd_value are { u64 packets; u64 bytes }', () => {
    for (const [object, struct] of [['dropreason', 'drop_value'], ['packetforward', 'fwd_value']] as const) {
      const layout = structLayout(object, struct);
      assert.deepEqual([layout.size, offsets(layout)], [16, { packets: 0, bytes: 8 }], `${object} ${struct}`);
    }
  });
});

describe('dns: struct dns_event', () => {
  it('the packet starts at DNS_EVENT_HEADER, and every header field decodes from its BTF offset', () => {
    const layout = structLayout('dns', 'dns_event');
    assert.equal(layout.fields.get('data')?.offset, DNS_EVENT_HEADER);
    const frame = [0xde, 0xad, 0xbe, 0xef, ...dnsFrame(dnsQuery(7, 'svc.cluster.local'))]; // IP header at 18, not 14
    const v = recordAt(layout, AT, {
      ts_ns: BIG, len: frame.length + 100, cap_len: frame.length, ifindex: 9, l3_off: 18, pkt_type: PACKET_OUTGOING, data: frame,
    }, ['pad']);
    const r = decodeDnsEvent(v, AT, layout.size);
    assert.deepEqual([r.tsNs, r.ifindex, r.outgoing, r.srcIp, r.dstIp, r.srcPort, r.dstPort], [BIG, 9, true, '10.0.0.1', '10.0.0.53', 40000, 53]);
    assert.equal(r.message.questions[0]?.name, 'svc.cluster.local');
  });
});
