/**
 * Whether the running kernel offers a BPF helper to a program type (libbpf_probe_bpf_helper: it loads a
 * tiny program that calls the helper, so the answer is the verifier's, whatever the version string says).
 */
import { errnoText, loadLibbpf } from './libbpf.js';

/** enum bpf_prog_type values of the program types we probe for (include/uapi/linux/bpf.h). */
const PROG_TYPES = { sched_cls: 3 } as const;
/** enum bpf_func_id values of the helpers we probe for (include/uapi/linux/bpf.h, __BPF_FUNC_MAPPER order). */
const HELPERS = { for_each_map_elem: 164 } as const;

const seen = new Map<string, boolean>();

export function kernelHasHelper(progType: keyof typeof PROG_TYPES, helper: keyof typeof HELPERS): boolean {
  const key = `${progType}/${helper}`;
  const known = seen.get(key);
  if (known !== undefined) return known;
  const rc = loadLibbpf().probeHelper(PROG_TYPES[progType], HELPERS[helper], null) as number;
  if (rc < 0) throw new Error(`cannot probe the kernel for bpf_${helper} in ${progType} programs: ${errnoText(-rc)}`);
  seen.set(key, rc === 1);
  return rc === 1;
}
