#!/usr/bin/env python3
"""Writes kubeconform schemas offline: one standalone JSON Schema per Kubernetes kind from swagger.json
(file <kind>-<group>-<version>.json, kubeconform's {{ .ResourceKind }}-{{ .Group }}-{{ .ResourceAPIVersion }}
would need groups; we use {{ .ResourceKind }}{{ .KindSuffix }} = kind-group-version, lower case) and one
per served version of each CRD (its openAPIV3Schema). Strict: objects without additionalProperties get
additionalProperties false, so a misspelt field is an error.

usage: schemas.py OUT_DIR SWAGGER_JSON CRD_YAML...
"""
import copy, json, os, sys
import yaml

def subschemas(node):
    """The schemas directly inside a schema (not its keywords' names: a property may be called "format")."""
    for key in ('properties', 'definitions', 'patternProperties'):
        yield from (node.get(key) or {}).values()
    for key in ('items', 'additionalProperties', 'not'):
        if isinstance(node.get(key), dict):
            yield node[key]
    for key in ('allOf', 'anyOf', 'oneOf'):
        yield from node.get(key) or []

def strict(node):
    """additionalProperties false on every object schema that lists its properties."""
    if 'properties' in node and 'additionalProperties' not in node and node.get('x-kubernetes-preserve-unknown-fields') is not True:
        node['additionalProperties'] = False
    for sub in subschemas(node):
        strict(sub)
    return node

def fix_formats(node):
    """int-or-string as oneOf, and date-time fields that may be null (as the API server accepts)."""
    if node.get('format') == 'int-or-string' or node.get('x-kubernetes-int-or-string') is True:
        node.pop('type', None)
        node.pop('format', None)
        node['oneOf'] = [{'type': 'string'}, {'type': 'integer'}]
    if node.get('format') == 'date-time' and node.get('type') == 'string':
        node['type'] = ['string', 'null']
    for sub in list(subschemas(node)):
        fix_formats(sub)
    return node

def refs(node, out):
    if isinstance(node, dict):
        r = node.get('$ref')
        if isinstance(r, str) and r.startswith('#/definitions/'):
            out.add(r[len('#/definitions/'):])
        for v in node.values():
            refs(v, out)
    elif isinstance(node, list):
        for v in node:
            refs(v, out)

def closure(defs, name):
    seen, todo = set(), [name]
    while todo:
        n = todo.pop()
        if n in seen or n not in defs:
            continue
        seen.add(n)
        found = set(); refs(defs[n], found); todo.extend(found - seen)
    return seen

def write(out_dir, kind, group, version, schema):
    g = group.split('.')[0] if group else ''
    name = f"{kind}-{g}-{version}" if g else f"{kind}-{version}"
    with open(os.path.join(out_dir, name.lower() + '.json'), 'w') as f:
        json.dump(schema, f)

def main():
    out_dir, swagger = sys.argv[1], sys.argv[2]
    defs = json.load(open(swagger))['definitions']
    count = 0
    for name, d in defs.items():
        for gvk in d.get('x-kubernetes-group-version-kind', []):
            if 'apiVersion' not in d.get('properties', {}):
                continue
            body = copy.deepcopy(d)
            body['definitions'] = {n: copy.deepcopy(defs[n]) for n in closure(defs, name) if n != name}
            body['$schema'] = 'http://json-schema.org/schema#'
            # references to the root itself stay valid through definitions
            if name in body['definitions']:
                pass
            body['definitions'][name] = copy.deepcopy(d)
            strict(fix_formats(body))
            body['properties']['apiVersion'] = {'type': 'string', 'enum': [
                f"{gvk['group']}/{gvk['version']}" if gvk['group'] else gvk['version']]}
            body['properties']['kind'] = {'type': 'string', 'enum': [gvk['kind']]}
            write(out_dir, gvk['kind'], gvk['group'], gvk['version'], body)
            count += 1
    for path in sys.argv[3:]:
        for doc in yaml.safe_load_all(open(path)):
            if not doc or doc.get('kind') != 'CustomResourceDefinition':
                continue
            spec = doc['spec']
            for v in spec['versions']:
                schema = copy.deepcopy(v['schema']['openAPIV3Schema'])
                schema['$schema'] = 'http://json-schema.org/schema#'
                strict(fix_formats(schema))
                schema.setdefault('properties', {})['metadata'] = {'type': 'object'}
                write(out_dir, spec['names']['kind'], spec['group'], v['name'], schema)
                count += 1
    print(f"{count} schemas in {out_dir}", file=sys.stderr)

if __name__ == '__main__':
    main()
