#!/usr/bin/env bash
# Watch for a profiled runner (python -m kernelcraft.runner ... --no-pid-namespace, under ncu) that
# lives longer than $1 seconds: dump its Python stacks (SIGUSR1: faulthandler, into its log), its
# state and kernel wait channel, ncu's state, then its log. Runs until killed.
age=${1:-40}
while sleep 3; do
  for pid in $(pgrep -f "kernelcraft.runner --fd"); do
    # ncu's and its subreaper's command lines name the runner too: only the Python process itself
    readlink "/proc/$pid/exe" 2>/dev/null | grep -q python || continue
    et=$(ps -o etimes= -p "$pid" | tr -d ' ')
    [ -n "$et" ] && [ "$et" -ge "$age" ] || continue
    [ -f "/tmp/watched.$pid" ] && continue
    touch "/tmp/watched.$pid"
    log=$(tr '\0' ' ' < /proc/$pid/cmdline | sed -n 's/.*--log \([^ ]*\).*/\1/p')
    echo "=== profiled runner $pid, ${et} s old; log $log"
    kill -USR1 "$pid"; sleep 2
    for t in /proc/$pid/task/*; do echo "task $(basename $t) $(awk '/State/{print $2}' $t/status) wchan $(cat $t/wchan 2>/dev/null)"; done | sort | uniq -c -f1 | head -20
    ps -eo pid,ppid,stat,etimes,args | grep -E "ncu|kernelcraft|ptxas|python" | grep -v grep | cut -c1-200
    tail -c 6000 "$log"
  done
done
