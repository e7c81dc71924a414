/**
 * Under Wine, iphlpapi reads the Linux host's counters, so the Linux files are the oracle: every
 * value must lie between the file read just before and just after the call (/sys/class/net/<if>/
 * statistics, /proc/net/snmp). Then the winutil plugin publishes them under linuxutil's names.
 */
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { describe, it } from 'node:test';
import { AF_INET, openIphlpapi } from '../../../src/ffi/windows/index.js';
import { winutil } from '../../../src/plugins/windows/winutil/index.js';
import { pluginContext, seriesValue, until } from './context.js';
import { linuxPath } from './wine.js';

const sysStat = (ifname: string, stat: string): number => Number(readFileSync(linuxPath(`/sys/class/net/${ifname}/statistics/${stat}`), 'utf8').trim());
const linuxIfs = (): string[] => readdirSync(linuxPath('/sys/class/net')).filter((n) => n !== 'lo');

function snmp(): Map<string, number> {
  const lines = readFileSync(linuxPath('/proc/net/snmp'), 'utf8').trim().split('\n');
  const out = new Map<string, number>();
  for (let i = 0; i + 1 < lines.length; i += 2) {
    const head = (lines[i] as string).split(/\s+/);
    const vals = (lines[i + 1] as string).split(/\s+/);
    head.slice(1).forEach((k, j) => out.set(`${(head[0] as string).replace(':', '')}.${k}`, Number(vals[j + 1])));
  }
  return out;
}

function between(what: string, before: number, got: number | undefined, after: number): void {
  assert.ok(got !== undefined && got >= before && got <= after, `${what}: Windows says ${got}, Linux says ${before}..${after}`);
}

describe('winutil against the Linux oracle', () => {
  it('GetIfTable2 byte and packet counters equal /sys/class/net/<if>/statistics', () => {
    const ip = openIphlpapi();
    const names = linuxIfs();
    const before = new Map(names.map((n) => [n, { rx: sysStat(n, 'rx_bytes'), tx: sysStat(n, 'tx_bytes') }]));
    const rows = ip.interfaces();
    let compared = 0;
    for (const n of names) {
      const row = rows.find((r) => r.alias === n);
      if (!row) continue;
      const b = before.get(n) as { rx: number; tx: number };
      between(`${n} InOctets`, b.rx, row.counters['InOctets'], sysStat(n, 'rx_bytes'));
      between(`${n} OutOctets`, b.tx, row.counters['OutOctets'], sysStat(n, 'tx_bytes'));
      compared++;
    }
    assert.ok(compared > 0, `no Linux interface (${names.join(', ')}) among Wine's (${rows.map((r) => r.alias).join(', ')})`);
  });

  it('GetTcpStatisticsEx, GetUdpStatisticsEx and GetIpStatisticsEx equal /proc/net/snmp', () => {
    const ip = openIphlpapi();
    const b = snmp();
    const tcp = ip.tcpStats(AF_INET).stats;
    const udp = ip.udpStats(AF_INET);
    const ipv4 = ip.ipStats(AF_INET);
    const a = snmp();
    for (const [k, v] of [['Tcp.InSegs', tcp['dwInSegs']], ['Tcp.OutSegs', tcp['dwOutSegs']], ['Tcp.ActiveOpens', tcp['dwActiveOpens']], ['Tcp.PassiveOpens', tcp['dwPassiveOpens']],
      ['Tcp.RetransSegs', tcp['dwRetransSegs']], ['Udp.InDatagrams', udp['dwInDatagrams']], ['Udp.OutDatagrams', udp['dwOutDatagrams']], ['Udp.NoPorts', udp['dwNoPorts']],
      ['Ip.InReceives', ipv4['dwInReceives']], ['Ip.OutRequests', ipv4['dwOutRequests']]] as const) {
      between(k, b.get(k) ?? NaN, v, a.get(k) ?? NaN);
    }
  });

  it('the winutil plugin publishes interface_stats, tcp_state, tcp/ip/udp_connection_stats under linuxutil names', async () => {
    const { ctx, metrics, statuses, abort } = pluginContext(winutil);
    const n = linuxIfs().find((x) => x.startsWith('eth')) ?? (linuxIfs()[0] as string);
    const rxBefore = sysStat(n, 'rx_bytes');
    const snmpBefore = snmp();
    const handle = await winutil.start(ctx);
    try {
      const text = await until('a winutil tick', async () => {
        const t = await metrics.registry.metrics();
        return seriesValue(t, 'interface_stats', { interface_name: n, statistic_name: 'rx_bytes' }) === undefined ? undefined : t;
      });
      between(`interface_stats ${n} rx_bytes`, rxBefore, seriesValue(text, 'interface_stats', { interface_name: n, statistic_name: 'rx_bytes' }), sysStat(n, 'rx_bytes'));
      between('ip_connection_stats InReceives', snmpBefore.get('Ip.InReceives') ?? NaN, seriesValue(text, 'ip_connection_stats', { statistic_name: 'InReceives' }), snmp().get('Ip.InReceives') ?? NaN);
      between('udp_connection_stats InDatagrams', snmpBefore.get('Udp.InDatagrams') ?? NaN, seriesValue(text, 'udp_connection_stats', { statistic_name: 'InDatagrams' }), snmp().get('Udp.InDatagrams') ?? NaN);
      assert.notEqual(seriesValue(text, 'tcp_state', { state: 'ESTABLISHED' }), undefined);
      assert.notEqual(seriesValue(text, 'tcp_connection_stats', { statistic_name: 'CurrEstab' }), undefined);
      assert.equal(seriesValue(text, 'interface_stats', { interface_name: 'lo', statistic_name: 'rx_bytes' }), undefined, 'the loopback interface is left out');
      assert.ok(statuses.includes('ok: statistics'), statuses.join('\n'));
    } finally {
      abort.abort();
      await handle[Symbol.asyncDispose]();
    }
  });
});
