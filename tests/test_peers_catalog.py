"""The catalog's peer files (issue 21): the strongest implementations a user could run instead of a
candidate, one ``tasks/<task>/peers/<name>.py`` each.

Every peer file declares a valid ``PEER`` dict, imports nothing but torch and the standard library
at its top level (its library is imported inside ``run`` / ``prepare``, so a missing library can
be reported as SKIPPED instead of failing the import), and names itself as its file does. Peers
that run on CPU are run here against each task's float64 reference through the task's own checker
at small shapes; the GPU-only ones are checked on the H200 by scripts/h200_peers_check.py.
"""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path

import pytest
import torch

from conftest import TASKS

PEER_KEYS = {"name", "library", "modules", "devices", "install"}
OPTIONAL_KEYS = {"min_capability"}
DEVICES = {"cuda", "cpu"}

# Small shapes inside each definition's constraints (CPU, float64 reference: keep them cheap).
SMALL_AXES = {
    "rmsnorm": [{"batch_size": 1}, {"batch_size": 3}],
    "fused_add_rmsnorm": [{"num_tokens": 1, "hidden_size": 4096}, {"num_tokens": 3, "hidden_size": 5000}],
    "layernorm": [{"num_tokens": 1, "hidden_size": 2560}, {"num_tokens": 3, "hidden_size": 1000}],
    "softmax": [{"num_rows": 1, "width": 1000}, {"num_rows": 3, "width": 4099}],
    "cross_entropy": [{"num_rows": 3, "vocab_size": 5000}, {"num_rows": 2, "vocab_size": 17000}],
    "fp8_rowwise_quant": [{"num_tokens": 3, "hidden_size": 14336}, {"num_tokens": 2, "hidden_size": 5000}],
    "topk": [{"num_rows": 2, "vocab_size": 3000, "k": 50}, {"num_rows": 3, "vocab_size": 200, "k": 8}],
    "kmeans_assign": [{"num_points": 300, "dim": 33, "num_centroids": 70},
                      {"num_points": 200, "dim": 8, "num_centroids": 3}],
}


def peer_paths() -> list[Path]:
    return sorted(TASKS.glob("*/peers/*.py"))


def _literal_peer(path: Path) -> tuple[ast.Module, dict]:
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in tree.body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["PEER"]:
            return tree, ast.literal_eval(node.value)
    raise AssertionError(f"{path}: no top-level `PEER = {{...}}` literal")


def peer_problems(path: Path) -> list[str]:
    """What is wrong with one peer file, judged from its source alone (empty when it is valid)."""
    tree, peer = _literal_peer(path)
    problems = []
    doc = ast.get_docstring(tree)
    if not doc or len(doc) < 80:
        problems.append("module docstring missing or too short: say which library function runs and how it maps")
    for node in tree.body:
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""] if node.level == 0 else ["<relative>"]
        elif isinstance(node, ast.Try | ast.If | ast.With):
            inner = [n for n in ast.walk(node) if isinstance(n, ast.Import | ast.ImportFrom)]
            if inner:
                problems.append(f"line {node.lineno}: imports inside a top-level {type(node).__name__}")
        for name in names:
            root = name.split(".")[0]
            if root != "torch" and root not in sys.stdlib_module_names:
                problems.append(f"line {node.lineno}: top-level import of {name!r}: import the library inside run/prepare")
    missing = PEER_KEYS - set(peer)
    extra = set(peer) - PEER_KEYS - OPTIONAL_KEYS
    if missing:
        problems.append(f"PEER lacks {sorted(missing)}")
    if extra:
        problems.append(f"PEER has unknown keys {sorted(extra)}")
    if peer.get("name") != path.stem:
        problems.append(f"PEER name {peer.get('name')!r} differs from the file name {path.stem!r}")
    for key in ("name", "library", "install"):
        if not isinstance(peer.get(key), str) or not peer.get(key):
            problems.append(f"PEER {key!r} must be a non-empty string")
    if not str(peer.get("install", "")).startswith("pip install "):
        problems.append("PEER 'install' must be the pip command that provides the library")
    modules = peer.get("modules")
    if not isinstance(modules, list) or not modules or not all(isinstance(m, str) and m for m in modules):
        problems.append("PEER 'modules' must be a non-empty list of module names")
    devices = peer.get("devices")
    if not isinstance(devices, list) or not devices or not set(devices) <= DEVICES:
        problems.append(f"PEER 'devices' must be a non-empty list drawn from {sorted(DEVICES)}")
    cap = peer.get("min_capability")
    if cap is not None and not (isinstance(cap, list) and len(cap) == 2 and all(isinstance(c, int) for c in cap)):
        problems.append("PEER 'min_capability' must be [major, minor]")
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    if "run" not in functions:
        problems.append("no top-level function `run`")
    return problems


def load_peer(path: Path):
    """Import a peer file by path, under a module name no library uses (a file named torch.py
    must not shadow torch)."""
    name = f"kc_peer_{path.parent.parent.name}_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# Catalog tasks no library implements (their peers/README.md says why).
NO_PEERS = {"balanced_kmeans_step"}


def test_every_catalog_task_has_its_peers_and_says_what_was_left_out():
    with_peers = {p.parent.parent.name for p in peer_paths()}
    catalog = {p.name for p in TASKS.iterdir() if (p / "definition.json").is_file()}
    assert with_peers == catalog - NO_PEERS, "a task needs peers/*.py, or a place in NO_PEERS with its reason"
    for task in catalog:
        readme = TASKS / task / "peers" / "README.md"
        assert readme.is_file(), f"{readme}: name the peers and what was left out, and why"


@pytest.mark.parametrize("path", peer_paths(), ids=lambda p: f"{p.parent.parent.name}/{p.stem}")
def test_peer_file_is_valid_and_imports_with_torch_alone(path):
    assert peer_problems(path) == []
    module = load_peer(path)  # CI has none of the libraries: a top-level library import fails here
    assert module.PEER == _literal_peer(path)[1]
    assert callable(module.run)
    assert not hasattr(module, "prepare") or callable(module.prepare)


def test_peer_problems_catches_bad_files(tmp_path):
    """The validator above is not vacuous: each defect of a bad peer file is named."""
    good = (TASKS / "rmsnorm" / "peers" / "liger.py").read_text()
    bad = tmp_path / "peers" / "liger.py"
    bad.parent.mkdir()
    bad.write_text("import liger_kernel\n" + good.replace('"devices": ["cuda"]', '"devices": ["gpu"]'))
    found = peer_problems(bad)
    assert any("top-level import of 'liger_kernel'" in p for p in found), found
    assert any("'devices'" in p for p in found), found
    renamed = tmp_path / "peers" / "other.py"
    renamed.write_text(good.replace("\ndef run(", "\ndef call("))
    found = peer_problems(renamed)
    assert any("differs from the file name" in p for p in found), found
    assert any("no top-level function `run`" in p for p in found), found


def _cpu_peers() -> list[Path]:
    return [p for p in peer_paths() if "cpu" in _literal_peer(p)[1]["devices"]]


def check_peer_on_cpu(path: Path, run=None, cases: list[tuple[dict, list]] | None = None,
                      errors: dict | None = None) -> list[str]:
    """Run a peer (its prepare first, if any) on small CPU workloads of its task; the reasons of
    every check that did not pass, judged by the task's checker against the float64 reference,
    and every input the peer modified. ``cases``: (axes, inputs) pairs to run instead of
    SMALL_AXES' workloads drawn by make_inputs; ``errors`` gets each workload's worst absolute and
    relative error (str(axes) -> (abs, rel))."""
    from kernelcraft.gauntlet.compare import compare, normalize_outputs
    from kernelcraft.task import load_task
    from kernelcraft.task.inputs import make_inputs
    from kernelcraft.task.workload import Workload

    task_name = path.parent.parent.name
    task = load_task(TASKS / task_name)
    module = load_peer(path)
    run = run or module.run
    namespace: dict = {}
    exec(compile(task.definition.reference, "<reference>", "exec"), namespace)  # noqa: S102 - the task's reference
    if cases is None:
        cases = [(axes, make_inputs(task, Workload(uuid=f"peer-test-{task_name}-{seed}", axes=axes), seed, "cpu"))
                 for seed, axes in enumerate(SMALL_AXES[task_name])]
    failures = []
    for axes, inputs in cases:
        pristine = [a.clone() if isinstance(a, torch.Tensor) else a for a in inputs]
        passed = [a.clone() if isinstance(a, torch.Tensor) else a for a in inputs]
        args = list(module.prepare(*passed)) if hasattr(module, "prepare") else passed
        got = normalize_outputs(run(*args), task.definition)
        up = [a.double() if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in pristine]
        ref = normalize_outputs(namespace["run"](*up), task.definition)
        check = compare(got, ref, task.definition, task.contract, task.definition.axis_values(axes), "cpu", pristine)
        if errors is not None:
            errors[str(axes)] = (check.max_abs_error, check.max_rel_error)
        if check.status != "PASSED":
            failures.append(f"{axes}: {check.status}: {check.reason}")
        # the tensors the peer was handed (``inputs`` itself never reaches it)
        for name, a, b in zip(task.definition.inputs, passed, pristine, strict=True):
            if isinstance(a, torch.Tensor) and not torch.equal(a, b):
                failures.append(f"{axes}: the peer modified its input {name!r}")
    return failures


@pytest.mark.parametrize("path", _cpu_peers(), ids=lambda p: f"{p.parent.parent.name}/{p.stem}")
def test_cpu_peer_meets_its_task_contract(path):
    assert path.parent.parent.name in SMALL_AXES, "add small CPU shapes for this task"
    assert check_peer_on_cpu(path) == []


def test_cpu_peer_check_rejects_a_wrong_peer():
    """The comparison above fails a peer that is off by a realistic bug (a 5% error in the scale)."""
    path = TASKS / "rmsnorm" / "peers" / "torch.py"
    module = load_peer(path)
    failures = check_peer_on_cpu(path, run=lambda x, w, eps: module.run(x, w * 1.05, eps))
    assert failures and all("INCORRECT_NUMERICAL" in f for f in failures), failures


def test_cpu_peer_check_rejects_a_peer_that_writes_its_input():
    """Right outputs computed in place over an input: the input check above names it (it compares
    the tensors the peer was handed, not copies it never saw)."""
    path = TASKS / "rmsnorm" / "peers" / "torch.py"
    module = load_peer(path)

    def in_place(x, w, eps):
        out = module.run(x, w, eps)
        x.copy_(out)
        return x

    failures = check_peer_on_cpu(path, run=in_place)
    assert failures == [f"{axes}: the peer modified its input 'hidden_states'" for axes in SMALL_AXES["rmsnorm"]], failures


def test_a_peer_version_comes_from_the_distribution_that_provides_its_module():
    from kernelcraft.task.peers import PeerSpec, library_version

    def spec(library: str, module: str) -> PeerSpec:
        return PeerSpec(name="x", path=Path("x.py"), library=library, modules=(module,), devices=("cpu",),
                        install="pip install x")

    assert library_version(spec("torch", "torch")) == torch.__version__.split("+")[0] or \
        library_version(spec("torch", "torch")) == torch.__version__
    # the named distribution absent (flash-linear-attention beside fla-core on the device): the module's, named
    assert library_version(spec("no-such-distribution-kc", "torch")) in (f"{torch.__version__} (torch)",
                                                                         f"{torch.__version__.split('+')[0]} (torch)")
    assert library_version(spec("no-such-distribution-kc", "no_such_module_kc")) is None
