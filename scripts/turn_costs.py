"""What one flushed turn of the timer costs in host time, piece by piece (issue 19: the timing loop's
rotation went from ~1.1 ms before the judge/runner split to ~2.2 ms after it).

    PYTHONPATH=src python scripts/turn_costs.py --device cuda --out /tmp/turn_costs.json
    PYTHONPATH=src python scripts/turn_costs.py --device cpu --reps 50      # a smoke run (no CUDA rows)

Each row is the median host wall time (microseconds) of ``--reps`` calls of one step, on an idle
device, in the order the timer's turn runs them (kernelcraft.measure.timing._CudaClock): the device
sync, the persisting-L2 reset, the L2 flush (enqueue alone and with its sync; beside it kc-timing/4's
int32 sum and a float32 max of the same bytes), three event creations,
one event record, a whole turn of a no-op and of a graph replay (``run`` + ``collect``); then the
judge<->runner wire: a request/reply round trip of a rep-sized JSON message to a forked echo process
over a socketpair (kernelcraft.runner.wire), the validation of a RepReply, and the fresh inputs of an
rmsnorm workload (make_inputs with and without its distribution check, check_values). Nothing here is
a verdict; it reads the same functions the timer and the judge use.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _median_us(fn, reps: int, setup=None) -> float:
    xs = []
    for _ in range(reps):
        if setup is not None:
            setup()
        t = time.perf_counter()
        fn()
        xs.append(time.perf_counter() - t)
    return round(1e6 * statistics.median(xs), 2)


def wire_rows(reps: int) -> dict:
    from kernelcraft.runner import protocol, wire

    a, b = socket.socketpair()
    pid = os.fork()
    if pid == 0:  # the echo side: a rep's reply for every request, as the runner's loop answers
        a.close()
        try:
            while True:
                msg, _ = wire.recv(b, max_fds=1)
                if msg.get("op") == "exit":
                    os._exit(0)
                wire.send(b, {"ms": 0.004321, "noop_ms": None, "tail_ms": 0.0231, "noop_tail_ms": None,
                              "id": msg.get("id")})
        except BaseException:  # noqa: BLE001
            os._exit(1)
    b.close()
    req = {"op": "rep", "noop": False, "noop_first": True, "id": 0}

    def round_trip():
        wire.send(a, req)
        wire.recv(a)

    rt = _median_us(round_trip, reps)
    wire.send(a, req)
    reply, _ = wire.recv(a)
    val = _median_us(lambda: protocol.RepReply.model_validate(reply), reps)
    wire.send(a, {"op": "exit"})
    os.waitpid(pid, 0)
    return {"wire_round_trip_us": rt, "rep_reply_validate_us": val}


def input_rows(device: str, reps: int) -> dict:
    import kernelcraft.task.inputs as inputs
    from kernelcraft.task.loader import load_task

    task = load_task(ROOT / "tasks/rmsnorm")
    out = {}
    for rows in (1, 1024):
        w = task.workloads[0].model_copy(update={"uuid": f"turn-costs-{rows}", "axes": {"batch_size": rows}})
        seed = iter(range(10**9))
        out[f"make_inputs_{rows}_us"] = _median_us(
            lambda w=w, seed=seed: inputs.make_inputs(task, w, next(seed), device), reps)
        args = inputs.make_inputs(task, w, 1, device)
        out[f"check_values_{rows}_us"] = _median_us(lambda w=w, args=args: inputs.check_values(task, w, args, "drawn"), reps)
    return out


def cuda_rows(reps: int) -> dict:
    import torch

    from kernelcraft.measure import _cudart
    from kernelcraft.measure import timing as T

    dev = "cuda"
    clock = T._CudaClock(dev)
    buf = clock.flush_buffer
    x = torch.zeros(4096, device=dev)
    y = torch.empty_like(x)
    g, _, err = T.capture(lambda: torch.add(x, 1, out=y), dev)
    assert g is not None, err
    ev = T._Event(enable_timing=True)
    sync = lambda: T._synchronize(dev)  # noqa: E731
    out = {
        "sync_idle_us": _median_us(sync, reps),
        "reset_persisting_l2_us": _median_us(_cudart.reset_persisting_l2, reps) if _cudart.available() else None,
        "flush_enqueue_us": _median_us(lambda: T._sum(buf), reps, setup=sync),
        "flush_with_sync_us": _median_us(lambda: (T._sum(buf), sync()), reps, setup=sync),
        "event_create_x3_us": _median_us(lambda: [T._Event(enable_timing=True) for _ in range(3)], reps),
        "event_record_us": _median_us(lambda: T._record(ev), reps, setup=sync),
        "graph_replay_enqueue_us": _median_us(lambda: T._replay(g), reps, setup=sync),
    }

    def turn(fn):
        def t():
            clock.run("f", fn, 0)
            clock.collect()
        return t

    # the flush as kc-timing/4 had it (int32 summed into int64) and a max instead of a sum
    ibuf = torch.ones(buf.numel(), dtype=torch.int32, device=dev)
    out["flush_int32_sum_with_sync_us"] = _median_us(lambda ibuf=ibuf: (torch.sum(ibuf), sync()), reps, setup=sync)
    out["flush_float32_amax_with_sync_us"] = _median_us(lambda: (torch.amax(buf), sync()), reps, setup=sync)
    del ibuf
    out["turn_noop_us"] = _median_us(turn(lambda: None), reps)
    out["turn_graph_us"] = _median_us(turn(lambda: T._replay(g)), reps)
    out["flush_step_us"] = _median_us(clock.flush, reps)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--reps", type=int, default=300)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT / "src"))
    result = {"device": args.device, "reps": args.reps, "unit": "us (median host wall time)"}
    result.update(wire_rows(args.reps))  # before any CUDA work: the echo process is forked
    import torch

    torch.set_grad_enabled(False)
    result.update(input_rows(args.device, args.reps))
    if args.device.startswith("cuda"):
        result.update(cuda_rows(args.reps))
        result["gpu"] = torch.cuda.get_device_name()
    from kernelcraft.measure.environment import environment

    result["environment"] = environment(args.device)
    result["date"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    print(json.dumps({k: v for k, v in result.items() if k != "environment"}, indent=1))
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
