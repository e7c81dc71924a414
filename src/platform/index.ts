export { selectPlatform, loadPlugins, loadDiagnose, loadCaptureProvider, currentOs, detect, type Platform } from './select.js';
export { beforeDeadline, runSection, runSections, type DiagnoseSection, type OsDiagnoseModule, type SectionResult } from './diagnose.js';
export { createPluginManager, type PluginManager, type PluginStatus, type ManagerOptions } from './manager.js';
export { missingHooks, parseKernelVersion, kernelAtLeast, type PlatformInfo } from './capabilities.js';
