"""The named checkers on real tensors: a correct (tie-broken) answer passes, each bad kind fails
naming its reason; contract errors name the file and the field."""

from __future__ import annotations

import pytest
import torch

from kernelcraft.errors import InputError
from kernelcraft.gauntlet.compare import canonical_outputs, compare
from kernelcraft.task import load_task
from kernelcraft.task.contract import Contract

from conftest import TASKS

TOPK = load_task(TASKS / "topk")
KM = load_task(TASKS / "kmeans_assign")
BAL = load_task(TASKS / "balanced_kmeans_step")


def _topk(values, indices, logits, ref=None):
    k = values.shape[-1]
    ref = ref or torch.topk(logits.double(), k, dim=-1)
    axes = {"num_rows": logits.shape[0], "vocab_size": logits.shape[1], "k": k}
    return compare([values, indices], list(ref), TOPK.definition, TOPK.contract, axes, "cpu", [logits, k])


def test_topk_any_tie_order_and_tied_choice_passes():
    x = torch.tensor([[1.0, 3.0, 3.0, 2.0, 3.0]], dtype=torch.bfloat16)
    # the reference keeps columns (1, 2); (4, 1) is another valid choice among the three tied 3.0s
    v, i = torch.tensor([[3.0, 3.0]], dtype=torch.bfloat16), torch.tensor([[4, 1]])
    assert _topk(v, i, x).status == "PASSED"
    # the determinism gate sees both orders of one set as the same answer
    a = canonical_outputs([v, i], TOPK.definition, TOPK.contract)
    b = canonical_outputs([v, i.flip(-1)], TOPK.definition, TOPK.contract)
    assert torch.equal(a[1], b[1]) and torch.equal(a[0], b[0])


@pytest.mark.parametrize("vals, idx, reason", [
    ([[3.0, 3.0]], [[1, 1]], "row 0 holds index 1 more than once"),
    ([[3.0, 3.0]], [[1, 5]], "out of range [0, 5)"),
    ([[3.0, 2.0]], [[1, 2]], "are not logits[row, index]"),
    ([[3.0, 2.0]], [[1, 3]], "not the 2 largest entries"),
    ([[2.0, 3.0, 3.0]], [[3, 1, 2]], "row 0 is not in descending order"),
])
def test_topk_rejects(vals, idx, reason):
    x = torch.tensor([[1.0, 3.0, 3.0, 2.0, 0.5]], dtype=torch.bfloat16)
    c = _topk(torch.tensor(vals, dtype=torch.bfloat16), torch.tensor(idx), x)
    assert c.status == "INCORRECT_NUMERICAL" and reason in c.reason, c.reason


def _km(index, x, c):
    axes = {"num_points": x.shape[0], "dim": x.shape[1], "num_centroids": c.shape[0]}
    ref = torch.cdist(x.double(), c.double()).argmin(1)
    return compare([index], [ref], KM.definition, KM.contract, axes, "cpu", [x, c])


def test_argmin_judges_ties_by_distance():
    x = torch.tensor([[0.0, 0.0], [1.0, 1.0]])
    c = torch.tensor([[1.0, 0.0], [0.0, 1.0], [5.0, 5.0]])
    assert _km(torch.tensor([1, 0]), x, c).status == "PASSED"  # point 0 is equally near 0 and 1
    bad = _km(torch.tensor([0, 2]), x, c)
    assert bad.status == "INCORRECT_NUMERICAL"
    assert "worst at row 1: index 2" in bad.reason and "the nearest is index" in bad.reason


def test_argmin_tolerance_is_the_stated_tf32_bound():
    torch.manual_seed(0)
    x, c = torch.randn(64, 16), torch.randn(8, 16)
    d = torch.cdist(x.double(), c.double()) ** 2
    best, second = d.topk(2, dim=1, largest=False).indices.unbind(1)
    scale = (x.double() ** 2).sum(1) + (c.double() ** 2).sum(1).max()
    gap = d.gather(1, second[:, None]).squeeze(1) - d.gather(1, best[:, None]).squeeze(1)
    pick = torch.where(gap <= 2e-3 * scale, second, best)  # second-nearest only where within rtol
    assert _km(pick, x, c).status == "PASSED"
    pick = torch.where(gap > 2e-3 * scale, second, best)
    assert _km(pick, x, c).status == "INCORRECT_NUMERICAL"
    assert _km(torch.full((64,), -1), x, c).reason.count("out of range [0, 8)") == 1


def _bal(assign, new_c, x, c):
    axes = {"num_points": x.shape[0], "dim": x.shape[1], "num_centroids": c.shape[0]}
    ns: dict = {}
    exec(compile(BAL.definition.reference, "<ref>", "exec"), ns)  # noqa: S102
    ref = ns["run"](x.double(), c.double())
    return compare([assign, new_c], list(ref), BAL.definition, BAL.contract, axes, "cpu", [x, c])


def _means(x, a, c):
    out = c.clone()
    for j in range(c.shape[0]):
        if (a == j).any():
            out[j] = x[a == j].mean(0)
    return out


def test_balanced_kmeans_validity_quality_consistency():
    torch.manual_seed(1)
    x, c = torch.randn(40, 4), torch.randn(5, 4)
    ns: dict = {}
    exec(compile(BAL.definition.reference, "<ref>", "exec"), ns)  # noqa: S102
    a, _ = ns["run"](x, c)
    assert _bal(a, _means(x, a, c), x, c).status == "PASSED"
    nearest = torch.cdist(x, c).argmin(1)
    if torch.bincount(nearest, minlength=5).max() > 8:
        r = _bal(nearest, _means(x, nearest, c), x, c)
        assert "over capacity ceil(n/k) = 8" in r.reason, r.reason
    rr = torch.arange(40) % 5
    r = _bal(rr, _means(x, rr, c), x, c)
    assert "above the reference's" in r.reason and "objective_rtol = 0.001" in r.reason
    r = _bal(a, c.clone(), x, c)
    assert "is not the mean of the points" in r.reason
    a5 = a.clone()
    a5[0] = 5
    assert "out of range [0, 5)" in _bal(a5, c, x, c).reason


def test_exact_checker_and_canonical_identity():
    from kernelcraft.task.definition import Definition

    d = Definition.model_validate({"name": "t", "op_type": "t", "axes": {"n": {"type": "var"}},
                                   "inputs": {"x": {"shape": ["n"], "dtype": "float32"}},
                                   "outputs": {"y": {"shape": ["n"], "dtype": "float32"}},
                                   "reference": "def run(x):\n    return x\n"})
    con = Contract.model_validate({"check": [{"kind": "exact", "outputs": ["y"]}]})
    ref = torch.tensor([1.0, 2.0, float("nan")], dtype=torch.float64)
    assert compare([ref.float()], [ref], d, con, {"n": 3}, "cpu").status == "PASSED"
    got = ref.float().clone()
    got[1] = torch.nextafter(got[1], torch.tensor(3.0))
    c = compare([got], [ref], d, con, {"n": 3}, "cpu")
    assert c.status == "INCORRECT_NUMERICAL" and "1 of 3 elements differ" in c.reason and "(1)" in c.reason


def test_contract_errors_name_file_and_field(tmp_path):
    import shutil

    t = tmp_path / "topk"
    shutil.copytree(TASKS / "topk", t, ignore=shutil.ignore_patterns("solutions"))
    text = (t / "contract.toml").read_text()
    (t / "contract.toml").write_text(text.replace('indices = "indices"', 'indices = "idx"'))
    with pytest.raises(InputError) as e:
        load_task(t)
    [p] = e.value.problems
    assert str(p.path).endswith("contract.toml") and p.field == "check.0.indices" and "'idx'" in p.problem
    (t / "contract.toml").write_text(text.replace('kind = "topk"', 'kind = "top_k"'))
    with pytest.raises(InputError) as e:
        load_task(t)
    assert any(p.field.startswith("check.0") for p in e.value.problems)
    (t / "contract.toml").write_text(text + '\n[[check]]\nkind = "exact"\noutputs = ["values"]\n')
    with pytest.raises(InputError) as e:
        load_task(t)
    assert "already judged by check.0" in e.value.problems[0].problem
