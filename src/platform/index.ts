export { selectPlatform, loadPlugins, currentOs, detect, type Platform } from './select.js';
export { createPluginManager, type PluginManager, type PluginStatus, type BackoffOptions, type ManagerOptions } from './manager.js';
export { missingHooks, parseKernelVersion, kernelAtLeast, type PlatformInfo } from './capabilities.js';
