export { RETINA_KEYS, convertRetinaValues, foreignRetinaKeys, pluginList, ruleFor, setPath, type Converted, type ConvertOptions, type RetinaKey, type Unmapped, type Values } from './retina-values.js';
export { inSchema, retinaKeys, retinaKeysYaml, schemaText, withRetinaEntries, type SchemaNode } from './files.js';
