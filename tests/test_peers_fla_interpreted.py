"""FLA's fused recurrent peers on CPU tensors, through the Triton interpreter: gdn_decode's fla.py
and the prefill tasks' fla_recurrent.py (the kernel a user runs at short sequences), each against
its task's float64 reference through the task's own checker (test_peers_catalog.check_peer_on_cpu),
at small workloads: a single token, and three sequences with an empty one between them.

FLA's chunked prefill kernels (peers/fla.py) do not run in the interpreter; they are checked on
the GPU (scripts/h200_peers_check.py). The interpreter is read when triton is first imported, so
these tests run in one pytest subprocess with TRITON_INTERPRET=1 (tests/e2e_support.py) unless
this process already has it. They skip, saying how to install it, where FLA cannot be imported.

FLA is not installed beside the suite: with fla importable, transformers' Qwen3-Next and the tests that
expect `peer:fla` SKIPPED (tests/test_peers_beside.py, test_trusted_timing.py, test_e2e_gdn.py) would
take it. CI installs it alone into a folder (.ci/run: `pip install --target .kernelcraft/fla-interpreted`)
that KERNELCRAFT_FLA_PATH names (scripts/test.sh sets it); only the interpreter subprocess gets it.
"""

from __future__ import annotations

import importlib.util
import math
import os
from pathlib import Path

import pytest
import torch
from e2e_support import interpreted, ran_in_the_interpreter
from test_peers_catalog import check_peer_on_cpu

from conftest import TASKS

INSTALL = ("pip install --no-deps --target .kernelcraft/fla-interpreted fla-core==0.6.0 flash-linear-attention==0.6.0 "
           "einops, then KERNELCRAFT_FLA_PATH=$PWD/.kernelcraft/fla-interpreted (scripts/test.sh sets it when the folder "
           "exists)")
FLA_PATH = os.environ.get("KERNELCRAFT_FLA_PATH") or None

# (task, peer file) -> the small workloads: batch sizes for decode, sequence lengths for prefill
PEERS = {
    ("gdn_decode", "fla"): [1, 3],
    ("gdn_prefill", "fla_recurrent"): [[1], [4, 0, 5]],
    ("kda_prefill", "fla_recurrent"): [[1], [4, 0, 5]],
}
IDS = [f"{task}/{name}" for task, name in PEERS]
INTERPRETED = (*(f"test_fla_peer_meets_its_task_contract[{i}]" for i in IDS),
               "test_a_transposed_state_is_rejected", "test_an_in_place_final_state_is_rejected")


def _need_fla():
    try:
        import fla  # noqa: F401
    except Exception as e:  # noqa: BLE001 - any import failure (missing einops, a triton mismatch) skips alike
        pytest.skip(f"flash-linear-attention cannot be imported ({type(e).__name__}: {e}); install it with: {INSTALL}")


@pytest.fixture(scope="module")
def under_interpreter(tmp_path_factory):
    if FLA_PATH:
        if not (Path(FLA_PATH) / "fla").is_dir():
            pytest.fail(f"KERNELCRAFT_FLA_PATH={FLA_PATH} holds no fla package; install it with: {INSTALL}")
    elif importlib.util.find_spec("fla") is None:  # without importing it here (it imports triton)
        pytest.skip(f"flash-linear-attention is not installed; install it with: {INSTALL}")
    return interpreted(__file__, INTERPRETED, tmp_path_factory, extra_path=FLA_PATH)


def _ran_elsewhere(request, under_interpreter) -> bool:
    """True when the test ran in the interpreter subprocess; its skip (FLA not importable there)
    is this test's skip."""
    if under_interpreter is not None:
        kind, text = under_interpreter[0].get(request.node.name) or (None, "")
        if kind == "skipped":
            pytest.skip(text.strip().splitlines()[0] if text.strip() else "skipped under TRITON_INTERPRET=1")
    return ran_in_the_interpreter(request, under_interpreter)


def cases(task_name: str, sizes: list) -> list[tuple[dict, list]]:
    """(axes, inputs) per workload: make_inputs' draws from the task's contract, with the
    workloads' scale 1/sqrt(head_size) and, for prefill, cu_seqlens from the given sequence lengths
    (an empty sequence between two others: drawn offsets give every sequence a token when there
    are enough tokens)."""
    from kernelcraft.task import load_task
    from kernelcraft.task.inputs import make_inputs
    from kernelcraft.task.workload import Workload

    task = load_task(TASKS / task_name)
    names = list(task.definition.inputs)
    out = []
    for seed, size in enumerate(sizes):
        if task_name == "gdn_decode":
            axes = {"batch_size": size}
        else:
            axes = {"total_seq_len": sum(size), "num_seqs": len(size), "len_cu_seqlens": len(size) + 1}
        inputs = make_inputs(task, Workload(uuid=f"fla-interpreted-{task_name}-{seed}", axes=axes), seed, "cpu")
        inputs[names.index("scale")] = 1 / math.sqrt(task.definition.axis_values(axes)["head_size"])
        if "cu_seqlens" in names:
            inputs[names.index("cu_seqlens")] = torch.tensor([0, *torch.tensor(size).cumsum(0).tolist()],
                                                             dtype=torch.int64)
        out.append((axes, inputs))
    return out


@pytest.mark.parametrize("task_name,peer", list(PEERS), ids=IDS)
def test_fla_peer_meets_its_task_contract(request, under_interpreter, task_name, peer):
    if _ran_elsewhere(request, under_interpreter):
        return
    _need_fla()
    errors: dict = {}
    path = TASKS / task_name / "peers" / f"{peer}.py"
    failures = check_peer_on_cpu(path, cases=cases(task_name, PEERS[task_name, peer]), errors=errors)
    print(f"{task_name}/{peer}: worst (abs, rel) error per workload {errors}")
    assert failures == []
    assert len(errors) == len(PEERS[task_name, peer])  # every workload was judged


KDA = TASKS / "kda_prefill" / "peers" / "fla_recurrent.py"


def test_a_transposed_state_is_rejected(request, under_interpreter):
    """The kda peer with FLA's default layout (state_v_first=False: the state read and written
    [K, V], transposed against the task's k-last [V, K]) fails on the numbers, not on a shape (the
    state is square)."""
    if _ran_elsewhere(request, under_interpreter):
        return
    _need_fla()
    from fla.ops.kda import fused_recurrent_kda

    def transposed(q, k, v, state, A_log, a, dt_bias, b, cu_seqlens, scale):
        out, new_state = fused_recurrent_kda(
            q[None], k[None], v[None], a[None], b[None], A_log=A_log, dt_bias=dt_bias.reshape(-1),
            scale=float(scale), initial_state=state, output_final_state=True, use_qk_l2norm_in_kernel=True,
            use_gate_in_kernel=True, use_beta_sigmoid_in_kernel=True, state_v_first=False, cu_seqlens=cu_seqlens)
        return out[0], new_state

    work = cases("kda_prefill", [[1]])
    failures = check_peer_on_cpu(KDA, run=transposed, cases=work)
    assert len(failures) == len(work) and all("INCORRECT_NUMERICAL" in f for f in failures), failures


def test_an_in_place_final_state_is_rejected(request, under_interpreter):
    """FLA's kda forward with its own default inplace_final_state=True (the final state written
    over initial_state and returned): the numbers are right, and the check names the input the
    peer wrote. fused_recurrent_kda itself always passes False; the peer file passes it too."""
    if _ran_elsewhere(request, under_interpreter):
        return
    _need_fla()
    from fla.ops.kda.fused_recurrent import fused_recurrent_kda_fwd

    def in_place(q, k, v, state, A_log, a, dt_bias, b, cu_seqlens, scale):
        out, new_state = fused_recurrent_kda_fwd(
            q[None], k[None], v[None], a[None], b[None], A_log=A_log, dt_bias=dt_bias.reshape(-1),
            initial_state=state, scale=float(scale), output_final_state=True, use_qk_l2norm_in_kernel=True,
            use_gate_in_kernel=True, use_beta_sigmoid_in_kernel=True, state_v_first=True, cu_seqlens=cu_seqlens)
        assert new_state is state  # what makes it in place
        return out[0], new_state

    work = cases("kda_prefill", [[1]])
    failures = check_peer_on_cpu(KDA, run=in_place, cases=work)
    assert failures == [f"{axes}: the peer modified its input 'state'" for axes, _ in work], failures
