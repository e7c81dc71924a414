/**
 * Runs linuxutil's readers once in the network namespace this process lives in (start it with
 * `ip netns exec <ns> node dist/test/linux/linuxutil-probe.js [interfaceStatsMode]`) and prints the
 * reading as JSON. interface_stats per interface with veths unless a mode is given.
 */
import { openEthtool } from '../../src/ffi/linux/ethtool.js';
import { openLinkDumper } from '../../src/ffi/linux/netlink.js';
import { readAll } from '../../src/plugins/linux/linuxutil/collect.js';
import { INTERFACE_STATS_MODES, InterfaceReader, type InterfaceStatsMode } from '../../src/plugins/linux/linuxutil/interfaces.js';

const mode = (process.argv[2] ?? 'per_interface_with_veths') as InterfaceStatsMode;
if (!INTERFACE_STATS_MODES.includes(mode)) throw new Error(`unknown interfaceStatsMode ${mode}`);
const ethtool = openEthtool();
const links = openLinkDumper();
try {
  const reading = await readAll(new InterfaceReader(() => links.dump(), [], ethtool, mode));
  process.stdout.write(JSON.stringify({ ...reading, failures: reading.failures.map((f) => `${f.what}: ${String(f.error)}`) }));
} finally {
  links[Symbol.dispose]();
  ethtool[Symbol.dispose]();
}
