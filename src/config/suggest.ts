/** "Did you mean": the known name closest to a misspelt one (case-insensitive edit distance). */

/** Levenshtein distance of two strings (insert, delete, substitute: 1 each). */
export function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) {
      cur[j] = Math.min((prev[j] as number) + 1, (cur[j - 1] as number) + 1, (prev[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = cur;
  }
  return prev[b.length] as number;
}

/**
 * The candidate nearest to `word`, ignoring case: one that starts with it (`pod` → `podname`), else
 * the nearest by edit distance when it is near enough to be a typo, at most a third of the word's
 * length away (2 edits are always allowed). Ties: the first listed.
 */
export function closestMatch(word: string, candidates: Iterable<string>): string | undefined {
  const w = word.toLowerCase();
  const list = [...candidates];
  if (w.length >= 3) {
    const longer = list.find((c) => c.toLowerCase().startsWith(w) && c.length > w.length);
    if (longer !== undefined) return longer;
  }
  const limit = Math.max(2, Math.floor(w.length / 3));
  let best: string | undefined;
  let bestD = limit + 1;
  for (const c of list) {
    const d = editDistance(w, c.toLowerCase());
    if (d < bestD) {
      best = c;
      bestD = d;
    }
  }
  return best;
}

/** ` (did you mean "x"?)`, or nothing when no candidate is close. */
export function didYouMean(word: string, candidates: Iterable<string>): string {
  const m = closestMatch(word, candidates);
  return m === undefined ? '' : ` (did you mean "${m}"?)`;
}
