"""torch.compile of the stock and the patched model, and what the compiler did around the exported ops.

``compile_step`` compiles with ``fullgraph=True`` (``fullgraph=False`` only when that fails, and the
record says why) and keeps, for the one call that compiles, the graph the backend received: with
Inductor the post-grad graph (``post_grad_custom_post_pass``, caches off so the passes run) and its
count of generated kernels (``torch._inductor.metrics.generated_kernel_count``); with an AOTAutograd
backend such as ``aot_eager`` (the CPU tests: Inductor cannot generate code around a user Triton kernel
without a GPU driver, AGENTS.md) the forward graph AOTAutograd hands to its compiler, run as is.

``graph_summary`` counts what the fusion question needs: the exported kernels as Triton launches
(``triton_kernel_wrapper_functional``, a ``torch.library.triton_op``: Inductor schedules it) or as opaque
calls of the op (a plain custom op, as under the Triton interpreter), and the aten ops of the regions
(``rsqrt`` per RMSNorm, ``silu`` per activation) left outside a kernel.
"""

from __future__ import annotations

import collections
import contextlib
import time

import torch

BACKENDS = ("inductor", "aot_eager")  # aot_eager: traced by AOTAutograd, no code generated (CPU tests)


def graph_summary(graph: torch.fx.Graph, namespaces: set[str]) -> dict:
    calls = collections.Counter()
    for n in graph.nodes:
        if n.op == "call_function":
            calls[str(n.target)] += 1
    triton = sum(v for k, v in calls.items() if "triton_kernel_wrapper" in k)
    opaque = sum(v for k, v in calls.items() if k.split(".")[0] in namespaces)
    return {"nodes": sum(calls.values()), "triton_kernel_nodes": triton, "opaque_op_nodes": opaque,
            "exported_op_nodes": triton + opaque,
            "rsqrt_nodes": sum(v for k, v in calls.items() if k.startswith("aten.rsqrt")),
            "silu_nodes": sum(v for k, v in calls.items() if k.startswith("aten.silu")),
            "add_nodes": sum(v for k, v in calls.items() if k.startswith("aten.add"))}


def _keeper():
    from torch._inductor.custom_graph_pass import CustomGraphPass

    class Keep(CustomGraphPass):
        """A post-grad pass that keeps a copy of the graph (uuid None: never served from a cache)."""

        def __init__(self):
            self.graphs: list[torch.fx.Graph] = []

        def __call__(self, graph: torch.fx.Graph) -> None:
            import copy

            self.graphs.append(copy.deepcopy(graph))

        def uuid(self):
            return None

    return Keep()


def compile_step(model: torch.nn.Module, call, backend: str, namespaces: set[str], device: str) -> tuple:
    """(the compiled step as a no-argument function or None, what happened). ``call(m)`` runs one step of
    ``m`` on fresh inputs and returns the logits."""
    import torch._dynamo
    from torch._dynamo.utils import counters

    if backend not in BACKENDS:
        raise ValueError(f"compile backend {backend!r}: use one of {BACKENDS}")
    info: dict = {"backend": backend}
    for fullgraph in (True, False):
        graphs: list[torch.fx.Graph] = []
        keep = _keeper() if backend == "inductor" else None
        dynamo_graphs: list[torch.fx.GraphModule] = []
        if backend == "inductor":
            from torch._inductor import config as icfg
            from torch._inductor import metrics
            from torch._inductor.compile_fx import compile_fx

            def be(gm, example_inputs, dynamo_graphs=dynamo_graphs):
                dynamo_graphs.append(gm)
                return compile_fx(gm, example_inputs)

            patches = icfg.patch({"post_grad_custom_post_pass": keep, "force_disable_caches": True})
            metrics.reset()
        else:
            from torch._dynamo.backends.common import aot_autograd

            def fw(gm, example_inputs, graphs=graphs):
                graphs.append(gm.graph)
                return gm.forward  # what aot_eager does: run the traced aten graph

            aot = aot_autograd(fw_compiler=fw)

            def be(gm, example_inputs, dynamo_graphs=dynamo_graphs, aot=aot):
                dynamo_graphs.append(gm)
                return aot(gm, example_inputs)

            patches = contextlib.nullcontext()
        counters.clear()
        cm = torch.compile(model, backend=be, fullgraph=fullgraph, dynamic=False)
        t0 = time.perf_counter()
        try:
            with patches, torch.no_grad():
                call(cm)
                if device.startswith("cuda"):
                    torch.cuda.synchronize()
            if backend == "inductor":
                info["inductor_kernels"] = metrics.generated_kernel_count
            with torch.no_grad():
                call(cm)  # a second call must not recompile (static shapes, same guards)
        except Exception as e:  # noqa: BLE001 - a compile failure is a result to record
            info[f"fullgraph_{fullgraph}_error"] = f"{type(e).__name__}: {str(e)[:600]}"
            continue
        info.update(fullgraph=fullgraph, compile_s=time.perf_counter() - t0, graphs=len(dynamo_graphs),
                    graph_breaks=sum(counters["graph_break"].values()),
                    recompiles=max(0, len(dynamo_graphs) - 1) if fullgraph else None)
        kept = keep.graphs if keep is not None else graphs
        info["graph_kind"] = "Inductor post-grad graph" if backend == "inductor" else "AOTAutograd forward graph"
        if kept:
            summaries = [graph_summary(g, namespaces) for g in kept]
            info["graph"] = {k: sum(s[k] for s in summaries) for k in summaries[0]}

        def compiled_step(cm=cm):
            with torch.no_grad():  # as compiled: a grad-enabled call would recompile (and need a backward)
                return call(cm)

        return compiled_step, info
    return None, info


def kernels_per_step(fn, device: str, iters: int = 3) -> float | None:
    """Device kernels launched per call of ``fn`` (CUDA only: the profiler's kernel events)."""
    if not device.startswith("cuda"):
        return None
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    with torch.no_grad():
        fn()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(iters):
                fn()
            torch.cuda.synchronize()
    kernels = [e for e in prof.events() if e.device_type == DeviceType.CUDA and "memcpy" not in e.name.lower()
               and "memset" not in e.name.lower()]
    return len(kernels) / iters


def fusion_verdict(stock: dict, export: dict, kernels_placed: int) -> dict:
    """Did the exported ops keep what Inductor had? Each placed kernel should take the place of exactly one
    Inductor kernel: Inductor kernels + exported kernels of the patched model <= Inductor kernels of the
    stock model. More means a neighbour Inductor had fused into the region runs as a kernel of its own."""
    out: dict = {"kernels_placed": kernels_placed}
    g = export.get("graph") or {}
    out["exported_op_nodes"] = g.get("exported_op_nodes")
    out["one_node_per_region"] = g.get("exported_op_nodes") == kernels_placed if g else None
    out["graph_breaks"] = export.get("graph_breaks")
    out["fullgraph"] = export.get("fullgraph")
    si, ei = stock.get("inductor_kernels"), export.get("inductor_kernels")
    if si is not None and ei is not None:
        out["inductor_kernels_stock"], out["inductor_kernels_export"] = si, ei
        out["extra_kernels"] = ei + kernels_placed - si
        out["fusion_kept"] = out["extra_kernels"] <= 0
    else:
        out["fusion_kept"] = None
        out["note"] = (f"backend {stock.get('backend')} generates no kernels: only the graph is checked "
                       "(one exported node per region, no graph break)")
    ks, ke = stock.get("kernels_per_step"), export.get("kernels_per_step")
    if ks is not None and ke is not None:
        out["kernels_per_step_stock"], out["kernels_per_step_export"] = ks, ke
    return out
