#!/usr/bin/env bash
# One step of `make test`'s set-up (a tool target of mk/*.mk: $(STEP) in the recipes). make runs the steps side by
# side and prints each one's output in one piece when it ends (--output-sync), so this ends that piece with one line
# on stderr: the step's name, when it started and ended (UTC), its wall time and its CPU time (user + system of
# everything it ran), or FAILED with the exit status; a failed step's name is also appended to the file
# $RETINA_STEP_FAILED when that is set (the Makefile's `test` recipe names the failed steps at the end of its log).
# Usage: hack/lib/step.sh NAME COMMAND [ARG...]; exits with COMMAND's status.
set -u
name=$1
shift
start=$(date -u +%H:%M:%S) t0=$SECONDS
"$@"
rc=$?
# Fields 16 and 17 of /proc/<pid>/stat (cutime, cstime): the CPU time of this shell's waited-for children and theirs.
read -r -a stat </proc/$$/stat
cpu=$(((stat[15] + stat[16]) * 10 / $(getconf CLK_TCK)))
times="$start-$(date -u +%H:%M:%S), $((SECONDS - t0)) s wall, $((cpu / 10)).$((cpu % 10)) s CPU"
if [ $rc -eq 0 ]; then
  echo "[$name] done $times" >&2
else
  echo "[$name] FAILED with status $rc $times: its log is above" >&2
  [ -z "${RETINA_STEP_FAILED:-}" ] || echo "$name" >>"$RETINA_STEP_FAILED"
fi
exit $rc
