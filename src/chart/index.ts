export { RETINA_KEYS, convertRetinaValues, foreignRetinaKeys, pluginList, ruleFor, setPath, type Converted, type ConvertOptions, type RetinaKey, type Unmapped, type Values } from './retina-values.js';
export { inSchema, retinaKeys, retinaKeysYaml, schemaText, withRetinaEntries, type SchemaNode } from './files.js';
export { CHART_READS, LINUX_ONLY_AGENT_KEYS, OPERATOR_FROM_CONFIG, OS_OVERRIDES, PER_OS_AGENT_KEYS, withConfigSections, type ConfigSpecs } from './schema.js';
