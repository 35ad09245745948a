"""Capture a model's step as aten FX graphs, run them node by node, and profile them.

- ``eager``: torch.compile with an AOTAutograd backend that keeps the aten graph as dispatched (no
  decompositions) and runs it unchanged, so every call_function node is one operator of eager mode.
- ``compile``: Inductor itself. ``post_grad_custom_post_pass`` keeps the post-grad graph (the one
  Inductor lowers) and a wrapper around Inductor's provenance hook records, for every kernel it
  generates or calls, the FX nodes it came from (``set_kernel_post_grad_provenance_tracing``, called
  once per kernel at code generation, torch >= 2.8). Caches are off during capture: a cache hit would
  generate nothing to record.

Graphs are static (``dynamic=False``): one per phase, so prefill and decode are two compiles, as
their shapes are. The real flat inputs of each graph are recorded at its first call, so the graph can
be run again eagerly (``run_graph``) to get every node's value: the model's own intermediate tensors,
which the written references are checked against.
"""

from __future__ import annotations

import contextlib
import copy
import re
from dataclasses import dataclass, field

import torch
import torch.fx

from kernelcraft.capture.models import CaptureError


@dataclass
class Kernel:
    """One kernel of a compiled graph: its name, whether Inductor generated it, its FX nodes."""

    name: str  # kernel name as generated (cpp_fused_..._3, triton_per_fused_...) or the extern op
    extern: bool  # an extern/fallback call (mm, sdpa, ...), not generated code
    nodes: list[str]  # origin FX nodes of the post-grad graph


@dataclass
class Captured:
    """One FX graph of one phase, with the inputs it was first called with."""

    gm: torch.fx.GraphModule
    inputs: list = field(default_factory=list)
    kernels: list[Kernel] = field(default_factory=list)  # compile mode only, in call order
    graph_id: int = 0


def _extern_nodes(k) -> list[str]:
    if getattr(k, "origin_node", None) is not None:
        return [k.origin_node.name]
    return [o.name for o in getattr(k, "origins", ())]


@contextlib.contextmanager
def _provenance(record: list):
    """Record (kernel_name, is_extern, origin node names) for every kernel Inductor emits."""
    try:
        import torch._inductor.codegen.cpp as cpp_mod
        import torch._inductor.debug as debug_mod
        from torch._inductor.ir import ExternKernel
    except ImportError as e:
        raise CaptureError(f"--compile needs torch's Inductor ({e})") from None
    orig = getattr(debug_mod, "set_kernel_post_grad_provenance_tracing", None)
    if orig is None:
        raise CaptureError(f"torch {torch.__version__} has no Inductor provenance hook "
                           "(set_kernel_post_grad_provenance_tracing); --compile capture needs torch >= 2.8")
    mods = [debug_mod, cpp_mod]
    try:
        import torch._inductor.codegen.triton as triton_mod  # imports triton; absent on some CPU installs

        mods.append(triton_mod)
    except ImportError:
        pass

    def hook(node_schedule, kernel_name, is_extern=False):
        try:
            if is_extern or isinstance(node_schedule, ExternKernel):
                record.append(Kernel(str(kernel_name), True, _extern_nodes(node_schedule)))
            else:
                names: list[str] = []
                for s in node_schedule:
                    node = getattr(s, "node", None)
                    for o in getattr(node, "origins", ()) or ():
                        if o.name not in names:
                            names.append(o.name)
                record.append(Kernel(str(kernel_name), False, names))
        except Exception:  # noqa: BLE001 - recording must never break compilation; a kernel missed shows as unmapped
            pass
        return orig(node_schedule, kernel_name, is_extern)

    saved = [(m, m.__dict__.get("set_kernel_post_grad_provenance_tracing")) for m in mods]
    for m, _ in saved:
        if "set_kernel_post_grad_provenance_tracing" in m.__dict__:
            m.set_kernel_post_grad_provenance_tracing = hook
    try:
        yield
    finally:
        for m, f in saved:
            if f is not None:
                m.set_kernel_post_grad_provenance_tracing = f


class _Recorder:
    """Wraps a compiled graph: keeps the first call's real inputs, then runs the graph."""

    _boxed_call = True

    def __init__(self, fn, cap: Captured, boxed: bool):
        self.fn, self.cap, self.boxed = fn, cap, boxed

    def __call__(self, args):
        if not self.cap.inputs:
            self.cap.inputs = [a.detach().clone() if isinstance(a, torch.Tensor) else a for a in args]
        if self.boxed:
            return self.fn(args)
        return self.fn(*args)


def capture_eager(model, kwargs: dict) -> tuple[list[Captured], object]:
    """The aten graphs of one forward (as eager mode dispatches them) and the forward's output."""
    from torch._dynamo.backends.common import aot_autograd

    graphs: list[Captured] = []

    def fw(gm, example_inputs):
        cap = Captured(gm=gm, graph_id=len(graphs))
        graphs.append(cap)
        return _Recorder(torch.fx.Interpreter(gm).boxed_run, cap, boxed=True)

    torch._dynamo.reset()
    cm = torch.compile(model, backend=aot_autograd(fw_compiler=fw), dynamic=False)
    with torch.no_grad():
        out = cm(**kwargs)
    torch._dynamo.reset()
    return graphs, out


@dataclass
class Compiled:
    graphs: list[Captured]
    fn: object  # the compiled model; call with the phase's kwargs
    output: object


def capture_compiled(model, kwargs: dict, device: str) -> Compiled:
    """Compile with Inductor, recording the post-grad graphs and the kernel -> FX node mapping."""
    import torch._inductor.config as icfg
    from torch._inductor.compile_fx import compile_fx, compile_fx_inner
    from torch._inductor.custom_graph_pass import CustomGraphPass

    graphs: list[Captured] = []
    post: list[torch.fx.Graph] = []

    class Keep(CustomGraphPass):
        def __call__(self, graph: torch.fx.Graph) -> None:
            post.append(graph)

        def uuid(self):  # never cached: capture must see the passes run
            return None

    def inner(gm, example_inputs, **kw):
        kernels: list[Kernel] = []
        with _provenance(kernels):
            compiled = compile_fx_inner(gm, example_inputs, **kw)
        graph = post[-1] if post else gm.graph
        owner = copy.deepcopy(graph.owning_module) if graph.owning_module is not None else gm
        pg = torch.fx.GraphModule(owner, copy.deepcopy(graph))
        cap = Captured(gm=pg, kernels=kernels, graph_id=len(graphs))
        graphs.append(cap)
        return _Recorder(compiled, cap, boxed=getattr(compiled, "_boxed_call", False))

    def backend(gm, example_inputs):
        return compile_fx(gm, example_inputs, inner_compile=inner)

    patches = {"post_grad_custom_post_pass": Keep(), "force_disable_caches": True}
    if not device.startswith("cuda"):
        patches["cpp.enable_kernel_profile"] = True  # names each C++ kernel in torch.profiler
    torch._dynamo.reset()
    with icfg.patch(patches):
        cm = torch.compile(model, backend=backend, dynamic=False)
        with torch.no_grad():
            out = cm(**kwargs)
    return Compiled(graphs, cm, out)


def run_graph(cap: Captured) -> dict[str, object]:
    """Run the captured graph eagerly on its recorded inputs; every node's value by name."""
    env: dict[str, object] = {}

    class Keep(torch.fx.Interpreter):
        def run_node(self, n):
            v = super().run_node(n)
            env[n.name] = v
            return v

    with torch.no_grad():
        Keep(cap.gm).run(*cap.inputs)
    return env


def node_ranges(cap: Captured, names: set[str], iters: int, device: str) -> tuple[dict[str, float], float]:
    """Eager mode: profile ``iters`` node-by-node runs of the graph; ms per run for each named node
    (the device time of the kernels it launched on CUDA, else its CPU time), and of the whole run."""
    from torch.profiler import ProfilerActivity, profile, record_function

    class Timed(torch.fx.Interpreter):
        def run_node(self, n):
            if n.name in names:
                with record_function(f"kc::node::{n.name}"):
                    return super().run_node(n)
            return super().run_node(n)

    cuda = device.startswith("cuda")
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    runner = Timed(cap.gm)
    with torch.no_grad():
        runner.run(*cap.inputs)
        if cuda:
            torch.cuda.synchronize()
        with profile(activities=acts) as prof:
            for _ in range(iters):
                with record_function("kc::graph"):
                    runner.run(*cap.inputs)
            if cuda:
                torch.cuda.synchronize()
    return node_ms(list(prof.events()), cuda, iters)


def node_ms(events, cuda: bool, iters: int) -> tuple[dict[str, float], float]:
    """ms per run of each ``kc::node::`` range and of the whole run, from profiler events. On CUDA a
    node's time is the device time of the kernels it launched, 0 where it launched none (an
    allocation such as ``empty_like``): its CPU time is not a share of the step's device time (an
    H200 capture ranked ``empty_like`` third at 4.2% of decode by counting its CPU time)."""
    from torch.autograd import DeviceType

    out: dict[str, float] = {}
    if cuda:
        total = sum(e.device_time for e in events if e.device_type != DeviceType.CPU) / iters / 1e3
    else:
        total = sum(e.cpu_time_total for e in events if e.name == "kc::graph") / iters / 1e3
    for e in events:
        if e.device_type == DeviceType.CPU and e.name.startswith("kc::node::"):
            t = (e.device_time_total or 0.0) if cuda else e.cpu_time_total
            key = e.name.removeprefix("kc::node::")
            out[key] = out.get(key, 0.0) + t / iters / 1e3
    return out, total


def step_ms(fn, make, iters: int, device: str) -> dict:
    """Profile ``iters`` calls ``fn(make())`` (``make`` runs outside the step: a fresh KV cache): ms per step (device time of every kernel on CUDA, else the CPU
    time of the step's range) and the profiler's events, for mapping kernels to regions."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile, record_function

    cuda = device.startswith("cuda")
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with torch.no_grad():
        fn(make())
        if cuda:
            torch.cuda.synchronize()
        kws = [make() for _ in range(iters)]  # made before profiling: their copies are no kernel of the step
        if cuda:
            torch.cuda.synchronize()
        with profile(activities=acts) as prof:
            for kw in kws:
                with record_function("kc::step"):
                    fn(kw)
            if cuda:
                torch.cuda.synchronize()
    events = list(prof.events())
    steps = [e for e in events if e.device_type == DeviceType.CPU and e.name == "kc::step"]
    cpu = sum(e.cpu_time_total for e in steps) / iters / 1e3
    dev = sum(e.device_time for e in events if e.device_type != DeviceType.CPU) / iters / 1e3 if cuda else None
    return {"ms": dev if cuda and dev else cpu, "cpu_ms": cpu, "device_ms": dev,
            "basis": "device time of every kernel" if cuda and dev else "CPU time of the step", "events": events}


def kernel_ms(compiled_graphs: list[Captured], events, iters: int, device: str) -> dict[tuple[int, int], float]:
    """Compile mode: ms per step of each kernel (graph id, kernel index), from the profiler's events.

    Generated kernels are found by name (CUDA: the Triton kernel; CPU: the ``graph_N_<kernel>`` range
    ``cpp.enable_kernel_profile`` adds); extern calls by their aten op (``aten::mm``) among the
    events that no other aten op encloses. A name that repeats (one kernel reused by every layer) is
    assigned in call order: the k-th launch of a name in a step is the k-th kernel of that name.
    """
    from torch.autograd import DeviceType

    cuda = device.startswith("cuda")
    wanted: dict[str, list[tuple[int, int]]] = {}
    for cap in compiled_graphs:
        for i, k in enumerate(cap.kernels):
            wanted.setdefault(_event_name(k, cap.graph_id, cuda), []).append((cap.graph_id, i))
    times: dict[tuple[int, int], float] = {}
    seen: dict[str, int] = {}
    evs = sorted(events, key=lambda e: e.time_range.start)
    for e in evs:
        if e.name.startswith("aten::"):
            if e.device_type != DeviceType.CPU or e.name not in wanted or _inside_aten(e):
                continue
            name, t = e.name, (e.device_time_total if cuda else e.cpu_time_total)
        elif cuda:
            if e.device_type == DeviceType.CPU:
                continue
            name = next((w for w in wanted if not w.startswith("aten::") and e.name.startswith(w)), None)
            t = e.device_time
        else:
            if e.device_type != DeviceType.CPU:
                continue
            bare = _GRAPH_PREFIX.sub("", e.name)
            name = bare if bare != e.name and bare in wanted else None
            t = e.cpu_time_total
        if name is None:
            continue
        slots = wanted[name]
        j = seen.get(name, 0)
        seen[name] = j + 1
        key = slots[j % len(slots)]
        times[key] = times.get(key, 0.0) + t / iters / 1e3
    return times


def _inside_aten(e) -> bool:
    p = e.cpu_parent
    while p is not None:
        if p.name.startswith("aten::"):
            return True
        p = p.cpu_parent
    return False


def _event_name(k: Kernel, graph_id: int, cuda: bool) -> str:
    if k.extern:
        # "extern_kernels.mm" / "torch.ops.aten.cumsum.default" -> "aten::mm" / "aten::cumsum"
        parts = k.name.split(".")
        op = parts[-2] if parts[-1] in ("default", "out", "Tensor", "Scalar") and len(parts) > 2 else parts[-1]
        return f"aten::{op}"
    return k.name


_GRAPH_PREFIX = re.compile(r"^graph_\d+_")  # cpp.enable_kernel_profile names a kernel graph_<N>_<kernel>
