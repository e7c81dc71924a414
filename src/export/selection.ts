/**
 * FlowSelections that are not ContainerNetworkLog resources: a fixed one (hubble.export.static's
 * allow/deny lists) and one whose filters are replaced at run time (a dynamic config file's entry).
 */
import type { FlowFilterObject, FlowSelection, SelectionFilters } from './types.js';

export interface SettableSelection extends FlowSelection {
  /** Replaces the filters in force and tells the listeners. */
  set(filters: SelectionFilters): void;
}

/** A selection whose filters change by `set`. */
export function settableSelection(initial: SelectionFilters): SettableSelection {
  let filters = initial;
  const listeners = new Set<() => void>();
  return {
    current: () => filters,
    set(next) {
      filters = next;
      for (const l of [...listeners]) l();
    },
    onChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}

/** A fixed selection: always active, `allow` (empty: every flow) minus `deny`. */
export function staticSelection(allow: readonly FlowFilterObject[], deny: readonly FlowFilterObject[]): FlowSelection {
  const filters: SelectionFilters = Object.freeze({ active: true, allow, deny });
  return { current: () => filters, onChange: () => () => undefined };
}
