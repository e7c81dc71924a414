/**
 * The stop of an on-call command: SIGINT (Ctrl-C), SIGTERM and SIGHUP abort the returned signal, so
 * the command deletes its pod before it exits; a second signal exits at once (status 130).
 */
export interface Stop extends Disposable {
  readonly signal: AbortSignal;
  /** The signal that stopped the command, if one did. */
  readonly by: () => string | undefined;
}

export function stopOnSignals(onStop: (sig: string) => void): Stop {
  const ac = new AbortController();
  let by: string | undefined;
  const handler = (sig: NodeJS.Signals): void => {
    if (by) process.exit(130);
    by = sig;
    onStop(sig);
    ac.abort(new Error(`stopped by ${sig}`));
  };
  const sigs: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];
  for (const s of sigs) process.on(s, handler);
  return {
    signal: ac.signal,
    by: () => by,
    [Symbol.dispose]: () => {
      for (const s of sigs) process.off(s, handler);
    },
  };
}
