export { ResourceStack, every, poll, liveResourceStacks } from './lifecycle.js';
export { PermanentError, PartialReadError, RETRYABLE_ERRNOS, errMessage, isPermanent, retryableErrno } from './errors.js';
export {
  definePlugin,
  everyIp,
  type IpInterest,
  type AnyPluginDefinition,
  type HookSpec,
  type OsName,
  type PluginContext,
  type PluginDefinition,
  type PluginState,
  type SelfMetrics,
  type StatusReporter,
} from './contract.js';
