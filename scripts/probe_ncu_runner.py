"""One profiled runner (the runner under Nsight Compute that confirms timings) started and asked to
build rmsnorm's Triton candidate, then closed: prints its sandbox, the build's verdict, its log and
what ncu said. KERNELCRAFT_PROFILED_SANDBOX_SKIP picks mechanisms this runner leaves out.

    python3 scripts/probe_ncu_runner.py OUT_CSV
"""

import json
import sys
import time
from pathlib import Path

from kernelcraft.gauntlet import confirm
from kernelcraft.gauntlet.judge import RemoteSubject
from kernelcraft.measure._ncu import find_ncu
from kernelcraft.runner.client import RunnerClient
from kernelcraft.runner.protocol import BuildReply
from kernelcraft.solution.model import load_solution
from kernelcraft.task.loader import load_task

task = load_task("tasks/rmsnorm")
sol = load_solution("tasks/rmsnorm/solutions/triton_rowwise.py", task.definition.name)
out = Path(sys.argv[1])
t0 = time.time()
c = RunnerClient("cuda", launcher=confirm.launcher(find_ncu()), launcher_output=out)
ok = False
try:
    c.wait_ready(60)
    print("ready", json.dumps(c.sandbox))
    subj = RemoteSubject(c, None, sol.spec.destination_passing_style, 60)
    b = subj._ask("build", BuildReply, timeout=60, solution=sol.to_json_dict(),
                  inputs=list(task.definition.inputs), outputs=list(task.definition.outputs))
    print("build", b.status, b.reason[:300])
    ok = b.status == "PASSED"
except Exception as e:  # noqa: BLE001 - a probe: print and go on
    print("failed", type(e).__name__, str(e)[:1500])
print("log:", c.log_tail(1500))
c.close()
print("ncu:", out.read_text(errors="replace")[-1200:] if out.exists() else "(none)")
print(f"took {time.time() - t0:.1f} s")
sys.exit(0 if ok else 1)
