/** Placeholder: `kubectl-retina capture download` comes from the capture-dl branch at merge. */
export async function runDownload(_argv: string[]): Promise<number> { throw new Error('not yet'); }
