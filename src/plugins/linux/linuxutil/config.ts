/** The one key linuxutil reads. */
import { InvalidValue, listKey, type ConfigSpec, type KeySpec } from '../../../config/index.js';

export interface LinuxutilConfig {
  readonly interfaceStatsExclude: readonly string[];
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
};
