"""The ledger as memory, on real SQLite ledgers: what worked on similar tasks of the H200 design
loop, and a second task of the same op type starting from the first task's best candidate (the
tuner on CPU; an OpenAI-compatible model served on loopback)."""

from __future__ import annotations

import json
import shutil
import sqlite3
import uuid
from pathlib import Path

import pytest

from conftest import FIXTURES, TASKS, kc

H200_LEDGER = FIXTURES / "ledgers" / "h200_design.db"  # a frozen copy of results/h200/design/ledger.db


def _db(tmp_path: Path) -> str:
    copy = tmp_path / "h200.db"
    shutil.copy(H200_LEDGER, copy)  # opening a ledger migrates and switches it to WAL: never the fixture
    return f"sqlite:///{copy}"


def _similar(task_dir: Path, db: str, *extra: str) -> dict:
    proc = kc("ledger", "similar", task_dir, "--db", db, "--json", *extra)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout)


def test_similar_tasks_of_the_h200_design_ledger(tmp_path):
    db = _db(tmp_path)
    out = _similar(TASKS / "balanced_kmeans_step", db, "--device", "NVIDIA H200", "--limit", "4", "--source")
    rows = out["similar"]
    # the same task's own earlier candidates first (best first), then kmeans_assign (same op type)
    assert [r["candidate_id"] for r in rows] == [23, 22, 19, 20]
    assert [r["task"] for r in rows] == ["balanced_kmeans_step_f32"] * 2 + ["kmeans_assign_f32"] * 2
    assert rows[0]["same_task"] and "op_type:kmeans" in rows[2]["shared"] and not rows[2]["same_task"]
    assert abs(rows[2]["speedup_vs_baseline"] - 2.958) < 1e-3 and rows[2]["promoted"]
    assert rows[2]["description"].startswith('Nearest-centroid assignment in Triton: split-bf16 ("bf16x3")')
    assert rows[0]["entry_fits"] and not rows[2]["entry_fits"]  # kmeans_assign's run has other outputs
    assert all(r["hardware"] == "NVIDIA H200" for r in rows)
    assert "@triton.jit" in rows[2]["sources"][0]["content"]
    table = kc("ledger", "similar", TASKS / "kmeans_assign", "--db", db)
    assert table.returncode == 0 and "kmeans_assign_f32" in table.stdout and "2.958" in table.stdout

    from kernelcraft.ledger import Ledger
    from kernelcraft.ledger.memory import similar
    from kernelcraft.task.loader import load_task

    ledger = Ledger(db)

    def found(task: str, **kw) -> list:
        return similar(ledger, load_task(TASKS / task).definition.model_dump(mode="json"), **kw)

    # layernorm shares only stage:norm with rmsnorm; op types never seen give nothing
    norm = found("rmsnorm")
    assert norm and {w.task for w in norm} == {"layernorm_bf16"} and norm[0].shared == ["stage:norm"]
    assert found("cross_entropy") == []
    # another device: nothing measured there; "H200" and "cuda" select the same rows as the full name
    assert found("balanced_kmeans_step", hardware="A100") == []
    ids = [w.candidate_id for w in found("balanced_kmeans_step", hardware="NVIDIA H200")]
    assert ids == [w.candidate_id for w in found("balanced_kmeans_step", hardware="h200")] == \
        [w.candidate_id for w in found("balanced_kmeans_step", hardware="cuda")]
    assert found("balanced_kmeans_step", hardware="cpu") == []
    best = found("kmeans_assign", limit=1)[0]
    assert best.candidate_id == 19 and "@triton.jit" in best.entry_source()
    ledger.engine.dispose()


def _rmsnorm_variant(dest: Path, name: str, hidden: int, keep_solutions: bool) -> Path:
    """A copy of tasks/rmsnorm renamed (another task of op type rmsnorm), hidden size ``hidden``,
    one small workload; without ``keep_solutions`` it has only its baseline (a new task)."""
    out = dest / name
    shutil.copytree(TASKS / "rmsnorm", out)
    d = json.loads((out / "definition.json").read_text())
    d["name"] = name
    d["axes"]["hidden_size"]["value"] = hidden
    d["constraints"] = [f"hidden_size == {hidden}" if "hidden_size" in c else c for c in d["constraints"]]
    (out / "definition.json").write_text(json.dumps(d, indent=2))
    rec = json.loads((out / "workloads.jsonl").read_text().splitlines()[0])
    rec["definition"] = name
    rec["workload"].update(uuid=str(uuid.uuid4()), axes={"batch_size": 8})
    (out / "workloads.jsonl").write_text(json.dumps(rec) + "\n")
    if not keep_solutions:
        shutil.rmtree(out / "solutions")
    return out


@pytest.fixture(scope="module")
def first_task(tmp_path_factory):
    """Task A (rmsnorm, h4096) tuned for two candidates into a fresh ledger: (ledger file, A's run)."""
    base = tmp_path_factory.mktemp("memory")
    task_a = _rmsnorm_variant(base, "rmsnorm_bf16_h4096", 4096, keep_solutions=True)
    db = base / "ledger.db"
    out = base / "a.json"
    proc = kc("optimize", task_a, "--agent", "tuner", "--device", "cpu", "--db", f"sqlite:///{db}", "--budget", "2",
              "--budget-ms", "20", "--json", out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    run = json.loads(out.read_text())
    assert [c["status"] for c in run["candidates"]] == ["PASSED"] * 3
    return db, run


def _best(run: dict) -> dict:
    return max((c for c in run["candidates"] if c["agent"] != "baseline"), key=lambda c: c["speedup_vs_baseline"])


def _config(solution_json: str) -> dict:
    from kernelcraft.agent.tuner import tunables_of

    sol = json.loads(solution_json)
    return tunables_of(sol["sources"][0]["content"])[1]


def test_second_task_tuner_starts_from_the_first_tasks_best(first_task, tmp_path):
    db_a, run_a = first_task
    db = tmp_path / "ledger.db"
    shutil.copy(db_a, db)
    task_b = _rmsnorm_variant(tmp_path, "rmsnorm_bf16_h2048", 2048, keep_solutions=False)
    assert not (task_b / "solutions").exists()
    # without the memory there is nothing to tune (what `optimize --no-memory` asks for)
    from kernelcraft.agent.base import AgentError
    from kernelcraft.agent.loop import make_agent
    from kernelcraft.task.loader import load_task

    with pytest.raises(AgentError, match="TUNABLES"):
        make_agent("tuner", load_task(task_b), from_memory=False)
    out = tmp_path / "b.json"
    proc = kc("optimize", task_b, "--agent", "tuner", "--device", "cpu", "--db", f"sqlite:///{db}", "--budget", "1",
              "--budget-ms", "20", "--json", out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    run_b = json.loads(out.read_text())
    best = _best(run_a)
    first = run_b["candidates"][1]
    assert first["agent"] == "tuner" and first["status"] == "PASSED"
    assert first["parent"] == best["id"]  # a parent in the other task's run
    assert "ledger memory: similar candidates" in proc.stdout
    with sqlite3.connect(db) as con:
        plan, sol_b, definition = con.execute("SELECT plan, solution, json_extract(solution, '$.definition') "
                                              "FROM candidates WHERE id = ?", (first["id"],)).fetchone()
        (sol_a,) = con.execute("SELECT solution FROM candidates WHERE id = ?", (best["id"],)).fetchone()
        (options,) = con.execute("SELECT options FROM runs WHERE id = ?", (run_b["run_id"],)).fetchone()
    assert f"start from ledger candidate {best['id']} of rmsnorm_bf16_h4096" in plan
    assert _config(sol_b) == _config(sol_a)  # the first task's best configuration, measured on this task
    assert definition == "rmsnorm_bf16_h2048"
    assert json.loads(options)["starting_point"] == best["id"]
    show = kc("ledger", "show", "--db", f"sqlite:///{db}", "--run", str(run_b["run_id"]))
    assert show.returncode == 0 and f"(from ledger candidate {best['id']})" in show.stdout


def test_second_task_llm_agent_gets_the_first_tasks_best_as_its_starting_point(first_task, tmp_path, monkeypatch):
    from test_agents_llm import (
        FIXED_KERNEL,
        REPLY_FIXED,
        _chat_completion,
        _no_proxy,
        _Server,
        _user_text_openai,
    )

    db_a, run_a = first_task
    db = tmp_path / "ledger.db"
    shutil.copy(db_a, db)
    task_b = _rmsnorm_variant(tmp_path, "rmsnorm_bf16_h2048", 2048, keep_solutions=False)
    srv = _Server(_chat_completion)
    try:
        _no_proxy(monkeypatch)
        monkeypatch.setenv("OPENAI_BASE_URL", srv.url + "/v1")
        monkeypatch.setenv("OPENAI_API_KEY", "test-openai-key")
        srv.replies = [(200, REPLY_FIXED)]
        out = tmp_path / "b.json"
        proc = kc("optimize", task_b, "--agent", "openai:test-model", "--budget", "1", "--device", "cpu",
                  "--db", f"sqlite:///{db}", "--budget-ms", "20", "--json", out)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    finally:
        srv.close()
    best = _best(run_a)
    run_b = json.loads(out.read_text())
    first = run_b["candidates"][1]
    assert first["status"] == "PASSED" and first["parent"] == best["id"]
    (request,) = srv.requests
    user = _user_text_openai(request["body"])
    assert "## What worked on similar tasks (the ledger)" in user
    assert f"### Starting point: ledger #{best['id']} (rmsnorm_bf16_h4096, " in user
    assert "its `run` takes this task's inputs unchanged" in user
    with sqlite3.connect(db) as con:
        (sol_a,) = con.execute("SELECT solution FROM candidates WHERE id = ?", (best["id"],)).fetchone()
    source_a = json.loads(sol_a)["sources"][0]["content"]
    assert source_a.strip().splitlines()[-1] in user and "TUNABLES = " in user  # the best candidate's source
    assert "## What the team measured (knowledge base)" in user
    assert "starting from ledger #" in user  # the next-step instruction points at it
    assert "FIXED_MARKER" in FIXED_KERNEL  # the reply that was evaluated
