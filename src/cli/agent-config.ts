/**
 * The agent's configuration as the agent loads it (defaults, then the file, then RETINA_* from the
 * environment) for this platform's plugins: shared by `retina-agent` and `retina-agent diagnose`, so
 * what diagnose shows is the config in force. Throws ConfigErrors for bad values.
 */
import { agentConfig, agentKeys, collectSpecs, loadValues, readConfigFile, type AgentConfig, type AgentKeys, type ConfigSpec, type KeySpec, type LoadedValues } from '../config/index.js';
import type { Platform } from '../platform/index.js';

export interface LoadedAgentConfig {
  readonly agent: AgentConfig;
  readonly keys: AgentKeys;
  readonly values: LoadedValues;
  /** Every declared key: the agent's and each plugin's. */
  readonly specs: readonly KeySpec<unknown>[];
}

/** What the config needs of the platform: the OS's name and its plugin list (not the host's detection). */
export type ConfigPlatform = Pick<Platform, 'plugins'> & { readonly info: Pick<Platform['info'], 'os'> };

export async function loadAgentConfig(platform: ConfigPlatform, configPath: string | undefined, env: NodeJS.ProcessEnv): Promise<LoadedAgentConfig> {
  const names = platform.plugins.map((p) => p.name);
  const keys = agentKeys({ os: platform.info.os, names, defaults: platform.plugins.filter((p) => p.defaultEnabled).map((p) => p.name) });
  const specs = collectSpecs(keys, ...platform.plugins.map((p) => p.config as ConfigSpec<object>));
  const fileText = configPath ? await readConfigFile(configPath) : undefined;
  const values = loadValues({ fileText, filePath: configPath, env, specs });
  return { agent: agentConfig(keys, values), keys, values, specs };
}
