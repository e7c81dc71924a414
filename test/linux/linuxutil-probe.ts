/**
 * Runs linuxutil's readers once in the network namespace this process lives in (start it with
 * `ip netns exec <ns> node dist/test/linux/linuxutil-probe.js`) and prints the reading as JSON.
 */
import { openEthtool } from '../../src/ffi/linux/ethtool.js';
import { readAll } from '../../src/plugins/linux/linuxutil/collect.js';
import { InterfaceReader } from '../../src/plugins/linux/linuxutil/interfaces.js';
import { SYS_CLASS_NET } from '../../src/plugins/linux/linuxutil/index.js';

const ethtool = openEthtool();
try {
  const reading = await readAll(new InterfaceReader(SYS_CLASS_NET, [], ethtool));
  process.stdout.write(JSON.stringify({ ...reading, failures: reading.failures.map((f) => `${f.what}: ${String(f.error)}`) }));
} finally {
  ethtool[Symbol.dispose]();
}
