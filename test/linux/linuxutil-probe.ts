/**
 * Runs linuxutil's readers once in the network namespace this process lives in (start it with
 * `ip netns exec <ns> node dist/test/linux/linuxutil-probe.js`) and prints the reading as JSON.
 */
import { openEthtool } from '../../src/ffi/linux/ethtool.js';
import { openLinkDumper } from '../../src/ffi/linux/netlink.js';
import { readAll } from '../../src/plugins/linux/linuxutil/collect.js';
import { InterfaceReader } from '../../src/plugins/linux/linuxutil/interfaces.js';

const ethtool = openEthtool();
const links = openLinkDumper();
try {
  const reading = await readAll(new InterfaceReader(() => links.dump(), [], ethtool));
  process.stdout.write(JSON.stringify({ ...reading, failures: reading.failures.map((f) => `${f.what}: ${String(f.error)}`) }));
} finally {
  links[Symbol.dispose]();
  ethtool[Symbol.dispose]();
}
