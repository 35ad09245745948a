"""What a task page shows of a contract, built from a task folder on disk (the ledger's
``tasks.root``), a wishlist request, or, failing both, the definition the ledger kept."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from markdown_it import MarkdownIt

from kernelcraft.task.contract import Contract
from kernelcraft.task.definition import Definition

# "js-default": CommonMark with raw HTML disabled and link schemes checked, safe for untrusted text.
_md = MarkdownIt("js-default")


def markdown(text: str) -> str:
    return _md.render(text or "")


@dataclass
class TaskView:
    name: str
    op_type: str
    description: str
    tags: list[str]
    axes: list[tuple[str, str, str]]  # name, "const 4096" / "var", description
    tensors: list[tuple[str, str, str, str, str]]  # kind, name, shape, dtype, description
    constraints: list[str]
    tolerances: list[tuple[str, str, float, float]]  # output, dtype, atol, rtol
    promotion: float
    workloads: list[tuple[str, str, str]]  # uuid, axes, inputs
    contract_text: str | None
    readme_html: str
    source: str  # where this view was read from
    notes: list[str] = field(default_factory=list)
    # the contract's rule to beat the fastest trusted row of the run (torch.compile, the peers); None: not asked
    promotion_vs_best_peer: float | None = None


def _shape(spec) -> str:
    return "scalar" if spec.shape is None else "[" + ", ".join(spec.shape) + "]"


def _with_scalar_shapes(definition: dict) -> dict:
    """``Definition.to_json_dict()`` (exclude_none) drops ``"shape": null``, so definitions the ledger
    stored do not validate back; a tensor spec without ``shape`` is a scalar (FlashInfer-Trace)."""
    d = dict(definition)
    for kind in ("inputs", "outputs"):
        if isinstance(d.get(kind), dict):
            d[kind] = {n: ({"shape": None, **spec} if isinstance(spec, dict) else spec) for n, spec in d[kind].items()}
    return d


def build(definition: dict, workloads: list[dict] | None, contract_text: str | None, readme: str,
          source: str) -> TaskView:
    d = Definition.model_validate(_with_scalar_shapes(definition))
    notes = []
    try:
        contract = Contract.model_validate(tomllib.loads(contract_text)) if contract_text else Contract()
    except (tomllib.TOMLDecodeError, ValueError) as e:
        contract, notes = Contract(), [f"contract.toml could not be read here ({e}); defaults shown"]
    axes = [(n, f"const {a.value}" if a.type == "const" else "var", a.description or "") for n, a in d.axes.items()]
    tensors = [(kind, n, _shape(s), s.dtype, s.description or "")
               for kind, specs in (("input", d.inputs), ("output", d.outputs)) for n, s in specs.items()]
    tols = []
    for n, s in d.outputs.items():
        t = contract.tolerance.for_output(n, s.dtype)
        tols.append((n, s.dtype, t.atol, t.rtol))
    wls = []
    for w in workloads or []:
        inputs = ", ".join(f"{k}: {v.get('type')}" + (f" {v.get('value')}" if v.get("type") == "scalar" else "")
                           for k, v in (w.get("inputs") or {}).items())
        wls.append((w.get("uuid", ""), ", ".join(f"{k}={v}" for k, v in (w.get("axes") or {}).items()), inputs or "random"))
    if workloads is None:
        notes.append("the task folder is not on this server: workloads and contract are not shown")
    return TaskView(d.name, d.op_type, d.description or "", list(d.tags), axes, tensors, list(d.constraints), tols,
                    contract.promotion.min_speedup_vs_baseline, wls, contract_text, markdown(readme), source, notes,
                    contract.promotion.min_speedup_vs_best_peer)


def from_folder(root: Path) -> TaskView | None:
    from kernelcraft.errors import InputError
    from kernelcraft.task.loader import load_task

    try:
        task = load_task(root)
    except (InputError, OSError):
        return None
    contract = root / "contract.toml"
    return build(task.definition.model_dump(mode="json"), [w.model_dump(mode="json") for w in task.workloads],
                 contract.read_text() if contract.is_file() else None,
                 task.readme_path.read_text() if task.readme_path else "", str(root))
