/** The keys linuxutil reads. */
import { InvalidValue, enumKey, listKey, type ConfigSpec, type KeySpec } from '../../../config/index.js';
import { INTERFACE_STATS_MODES, type InterfaceStatsMode } from './interfaces.js';

export interface LinuxutilConfig {
  readonly interfaceStatsExclude: readonly string[];
  /** all_interfaces (Retina's sum), per_interface (no veths), per_interface_with_veths. */
  readonly interfaceStatsMode: InterfaceStatsMode;
}

const PATTERN = /^[A-Za-z0-9_.:@*-]{1,15}$/;

function patternList(): KeySpec<readonly string[]> {
  const base = listKey(
    'interfaceStatsExclude',
    [],
    'Ours: interfaces left out of interface_stats, by name; * matches any characters (e.g. lxc*, cali*). lo is always left out.',
    { allowedText: 'a list of interface names or patterns with * (up to 15 characters of A-Z a-z 0-9 _ . : @ - *)' },
  );
  return {
    ...base,
    parse(raw) {
      const list = base.parse(raw);
      const bad = list.find((p) => !PATTERN.test(p));
      if (bad !== undefined) throw new InvalidValue(`${base.allowed} (bad: ${bad})`);
      return list;
    },
  };
}

export const linuxutilConfig: ConfigSpec<LinuxutilConfig> = {
  interfaceStatsExclude: patternList(),
  interfaceStatsMode: enumKey(
    'interfaceStatsMode',
    'all_interfaces',
    INTERFACE_STATS_MODES,
    "Ours: the shape of interface_stats. all_interfaces (Retina's): the drivers' err/drop ethtool stats summed over interfaces whose name contains none of lo, cbr0, lxc, azv, one series per statistic (interface_name=\"all_interfaces\"), however many pods; per_interface: every interface's kernel counters and err/drop stats, veths (pod interfaces) left out; per_interface_with_veths: the same with veths (about 25 series per pod).",
  ),
};
