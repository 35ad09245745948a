"""The torch.compile row (worker/child.py): a reference whose helper Dynamo inlines compiles (its
module is registered under the name Dynamo looks it up by), and a compile that fails makes the row
SKIPPED with the compiler's reason, not RUNTIME_ERROR. The task-level rows (gdn_decode compiled,
the prefill references declaring why they cannot be) are checked in test_linear_attention.py.
"""

from __future__ import annotations

import importlib.util

import torch

from kernelcraft.worker import child

REFERENCE = '''import torch


def _l2norm(x):
    return x / torch.sqrt((x * x).sum(-1, keepdim=True) + 1e-6)


@torch.no_grad()
def run(x, w):
    return _l2norm(x) * w
'''


def test_inlined_helper_compiles_and_a_failed_compile_is_skipped(tmp_path):
    """The H200's gdn_decode torch.compile row, 2026-12-01: a reference module imported from a file
    and never registered fails as soon as Dynamo inlines its helper. Loaded that way here, the
    failure is real, and the row's verdict says torch.compile could not compile the reference;
    loaded by the worker's _import_file, the same reference compiles and matches eager."""
    path = tmp_path / "kc_compile_row_ref.py"
    path.write_text(REFERENCE)
    x, w = torch.randn(3, 16), torch.randn(16)

    spec = importlib.util.spec_from_file_location("kc_compile_row_unregistered", path)
    loose = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loose)  # as child._import_file did before
    torch._dynamo.reset()
    guarded = child._compile_guarded(torch.compile(loose.run, backend="eager", dynamic=False))
    try:
        guarded(x, w)
        raise AssertionError("Dynamo compiled a function of an unimportable module")
    except torch._dynamo.exc.TorchDynamoException:
        pass
    failed = {"status": "RUNTIME_ERROR", "gate": "correctness", "reason": "Traceback ..."}
    verdict = child._compile_verdict(guarded, failed)
    assert verdict["status"] == "SKIPPED" and verdict["gate"] == "build"
    assert verdict["reason"].startswith("torch.compile cannot compile the reference: InternalTorchDynamoError")
    assert "No module named 'kc_compile_row_unregistered'" in verdict["reason"]
    # a passing result, or a row that never failed to compile, keeps its verdict
    assert child._compile_verdict(guarded, {"status": "PASSED"}) == {"status": "PASSED"}
    other = child._compile_guarded(lambda *a: 1 / 0)
    assert child._compile_verdict(other, failed) is failed

    module = child._import_file(path, "kc_compile_row_registered")
    torch._dynamo.reset()
    compiled = child._compile_guarded(torch.compile(module.run, backend="eager", dynamic=False))
    assert torch.allclose(compiled(x, w), module.run(x, w), rtol=1e-6, atol=1e-7)
    assert compiled.cannot_compile == []
    torch._dynamo.reset()
