#!/usr/bin/env bash
# Run a command under a time limit; if it is still running AT seconds in, write every Python process's stack
# (py-spy dump: the eval, its worker judges, the candidates' runners, the forkserver) and the GPU's state
# (nvidia-smi: utilisation, the processes holding it) to FILE, then let it run to its limit. For a stall: which
# process waits for what (a GPU slot, a runner's reply, a lock, a kernel that never ends) in one call.
#   usage: AT=45 FILE=$OUT/stacks.txt bash scripts/dump_stacks.sh LIMIT_S command args...
# py-spy: `pip install py-spy` (a static binary in a wheel; on the device machine from .whl-diag, carried).
set -u
limit=$1; shift
AT=${AT:-$(( limit * 3 / 4 ))} FILE=${FILE:-/tmp/stacks.txt}
timeout "$limit" "$@" &
pid=$!
(
  sleep "$AT"
  if kill -0 "$pid" 2>/dev/null; then
    {
      echo "# $(date -u +%FT%TZ): still running ${AT} s after: $*"
      command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=utilization.gpu,memory.used,clocks.sm --format=csv \
        && nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv
      for p in $(pgrep -f python | sort -n); do
        [ "$p" = "$$" ] && continue
        echo; echo "## pid $p: $(tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null | cut -c1-200)"
        timeout 20 py-spy dump --pid "$p" 2>&1 | head -60
      done
    } > "$FILE" 2>&1
  fi
) &
watcher=$!
wait "$pid"; rc=$?
kill "$watcher" 2>/dev/null; wait "$watcher" 2>/dev/null
exit $rc
