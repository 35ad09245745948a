"""How FlashInfer-Bench judges a definition, written as the task's ``contract.toml``.

FlashInfer-Bench 0.1.x (``flashinfer_bench/bench``) decides a verdict as follows, and an imported task
says the same in kernelcraft's terms:

- tolerance: ``atol = rtol = 1e-2`` for every output (``ResolvedEvalConfig``), an element failing when
  it exceeds both. FlashInfer-Bench compares against the reference run in the inputs' precision;
  kernelcraft's judge runs it in float64 where its ops allow, which only removes the reference's own
  rounding from the error.
- ``op_type = "moe"`` (``eval_config.yaml``) and ``moe_fp8_block_scale`` definitions (its
  ``LowBitEvaluator``): 95% of each output's elements must be within the tolerance.
- ``op_type = "sampling"`` (its ``SamplingEvaluator``): the ``sampling`` checker (validity of every
  sample, total-variation distance 0.2 over many draws); ``probs`` drawn as softmax of normal draws,
  as its ``gen_inputs`` does; outputs are random, so ``deterministic = false``.
- C/C++ solutions may call ``cudaDeviceSynchronize`` (``allow_device_sync``): FlashInfer-Trace's CUDA
  solutions do, and a device-wide sync lets no work escape the timer.

Index inputs (``*_indptr``, ``*_indices``) are drawn so that the definition's constraints hold
(:func:`index_rules`): FlashInfer-Bench reads them from the dataset's safetensors blobs; kernelcraft
needs them for holdout shapes, and for workloads whose blob the dataset does not carry.
"""

from __future__ import annotations

import ast
import re

FIB_ATOL = FIB_RTOL = 1e-2  # flashinfer_bench/bench/config.py ResolvedEvalConfig
SAMPLER_TOP_K = 64  # top_k drawn in [1, 64): serving frameworks' usual range, not FlashInfer-Bench's int32 draw
SAMPLER_TOP_P = (0.5, 1.0)
LOWBIT_MATCHED_RATIO = 0.95  # eval_config.yaml op_type moe; evaluators/lowbit.py
_UNSUPPORTED = {  # definitions FlashInfer-Bench judges with an evaluator kernelcraft does not have
    "dsa_topk_indexer": "FlashInfer-Bench judges it with DsaTopkIndexerEvaluator (scores of the chosen "
                        "indices, sorted, within tolerance), which kernelcraft has no checker for",
    "dsa_sparse_attention": "FlashInfer-Bench judges it with DsaSparseAttentionEvaluator, which kernelcraft "
                            "has no checker for",
}


def unsupported(definition: dict) -> str:
    name = definition.get("name", "")
    return next((why for key, why in _UNSUPPORTED.items() if key in name), "")


def _offset_totals(definition: dict) -> dict[str, str]:
    """input -> axis for constraints ``AXIS == input[-1].item()`` (either side)."""
    out = {}
    for c in definition.get("constraints", []):
        try:
            tree = ast.parse(c, mode="eval").body
        except SyntaxError:
            continue
        if not (isinstance(tree, ast.Compare) and len(tree.ops) == 1 and isinstance(tree.ops[0], ast.Eq)):
            continue
        for a, b in ((tree.left, tree.comparators[0]), (tree.comparators[0], tree.left)):
            m = re.fullmatch(r"(\w+)\[-1\]\.item\(\)", ast.unparse(b))
            if m and isinstance(a, ast.Name):
                out[m.group(1)] = a.id
    return out


def index_rules(definition: dict) -> tuple[dict[str, dict], dict[str, str]]:
    """([inputs.<name>] tables for the index inputs, why each). FlashInfer-Trace's conventions:

    - an integer ``[len]`` input whose last value a constraint equates with an axis (``num_kv_indices ==
      kv_indptr[-1].item()``) holds offsets: non-decreasing from 0 to that axis;
    - in a causal prefill, ``qo_indptr``'s segments lie within ``kv_indptr``'s (a query attends at least
      to its own position: more queries than keys leave rows with nothing to attend to);
    - an integer ``*_indices`` input whose length is an offsets total holds page ids: [0, num_pages).
    """
    inputs = definition.get("inputs", {})
    axes = definition.get("axes", {})
    totals = _offset_totals(definition)
    dists: dict[str, dict] = {}
    why: dict[str, str] = {}
    for name, axis in totals.items():
        spec = inputs.get(name, {})
        if spec.get("shape") and len(spec["shape"]) == 1 and str(spec.get("dtype", "")).startswith(("int", "uint")):
            dists[name] = {"dist": "offsets", "total": axis}
            why[name] = f"offsets from 0 to {axis} (the constraint {axis} == {name}[-1].item())"
    causal = "causal" in definition.get("name", "")
    if causal and dists.get("qo_indptr") and dists.get("kv_indptr"):
        dists["qo_indptr"]["within"] = "kv_indptr"
        why["qo_indptr"] += "; each sequence's queries no more than its keys (causal prefill)"
    offset_axes = set(totals.values())
    for name, spec in inputs.items():
        shape = spec.get("shape") or []
        if name.endswith("indices") and len(shape) == 1 and shape[0] in offset_axes and "num_pages" in axes \
                and str(spec.get("dtype", "")).startswith(("int", "uint")):
            dists[name] = {"dist": "randint", "low": 0, "high": "num_pages"}
            why[name] = "page ids in [0, num_pages) (FlashInfer's paged KV cache)"
    return dists, why


def contract_toml(definition: dict, dists: dict[str, dict]) -> tuple[str, list[str]]:
    """The task's contract.toml, and the README lines that say why each part is there."""
    outputs = definition.get("outputs", {})
    float_dtypes = sorted({o["dtype"] for o in outputs.values() if str(o.get("dtype", "")).startswith(("float", "bfloat"))})
    lines = ["# Written by `kernelcraft import fib`: FlashInfer-Bench's own rules for this definition (README.md).", ""]
    notes = [f"- tolerance: atol = rtol = {FIB_ATOL:g} for every floating output (FlashInfer-Bench's default); "
             "kernelcraft compares against the reference in float64 where its ops allow"]
    for dt in float_dtypes:
        lines += [f"[tolerance.{dt}]", f"atol = {FIB_ATOL!r}", f"rtol = {FIB_RTOL!r}", ""]
    lines += ["[integrity]", "allow_device_sync = true  # FlashInfer-Trace CUDA solutions call cudaDeviceSynchronize"]
    notes.append("- C/C++ solutions may call cudaDeviceSynchronize ([integrity] allow_device_sync)")
    sampling = definition.get("op_type") == "sampling"
    if sampling:
        lines.append("deterministic = false  # a sampler's outputs are random")
    lines.append("")
    inputs = definition.get("inputs", {})
    if sampling and "probs" in inputs:
        dists = {"probs": {"dist": "softmax"}, **dists}
        notes.append("- `probs`: softmax of N(0, 1) draws over the vocabulary (FlashInfer-Bench's gen_inputs)")
        vocab = definition.get("axes", {}).get("vocab_size", {}).get("value")
        if "top_k" in inputs:
            dists["top_k"] = {"dist": "randint", "low": 1, "high": min(SAMPLER_TOP_K, int(vocab or SAMPLER_TOP_K))}
        if "top_p" in inputs:
            dists["top_p"] = {"dist": "uniform", "low": SAMPLER_TOP_P[0], "high": SAMPLER_TOP_P[1]}
        if "top_k" in inputs or "top_p" in inputs:
            notes.append(f"- `top_k` / `top_p` where a workload draws them: k in [1, {SAMPLER_TOP_K}), p in "
                         f"[{SAMPLER_TOP_P[0]}, {SAMPLER_TOP_P[1]}) (kernelcraft's choice: FlashInfer-Bench draws them "
                         "as any int32 / N(0, 1) float, and p <= 0 makes the references take the argmax, which its "
                         "own sampling rule rejects)")
    for name, d in dists.items():
        lines.append(f"[inputs.{name}]")
        for k, v in d.items():
            lines.append(f"{k} = {v!r}" if not isinstance(v, str) else f'{k} = "{v}"')
        lines.append("")
    if sampling:
        out = next(iter(outputs), "samples")
        lines += ["[[check]]", 'kind = "sampling"', f'samples = "{out}"', 'probs = "probs"']
        lines += [f'{k} = "{k}"' for k in ("top_k", "top_p") if k in inputs]
        lines.append("")
        notes.append(f"- `{out}`: FlashInfer-Bench's sampling rule (every sample inside the top-k / top-p set; "
                     "total-variation distance <= 0.2 over 500000 draws per row)")
    elif definition.get("op_type") == "moe" or "moe_fp8_block_scale" in definition.get("name", ""):
        names = [n for n, o in outputs.items() if str(o.get("dtype", "")).startswith(("float", "bfloat"))]
        if names:
            lines += ["[[check]]", 'kind = "tolerance"', f"outputs = {names!r}".replace("'", '"'),
                      f"min_matched_ratio = {LOWBIT_MATCHED_RATIO!r}", ""]
            notes.append(f"- {', '.join(f'`{n}`' for n in names)}: at least {LOWBIT_MATCHED_RATIO:g} of the elements "
                         "within the tolerance (FlashInfer-Bench's low-bit MoE rule)")
    return "\n".join(lines), notes
