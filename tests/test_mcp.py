"""`kernelcraft mcp`: the real server, started as a subprocess, answers a real MCP client over stdio."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys

from mcp import ClientSession, StdioServerParameters, stdio_client

from conftest import FIXTURES, ROOT, TASKS, small_task

TOOLS = {"task_info", "evaluate", "evaluate_source", "ledger_runs", "ledger_run", "knowledge_search", "knowledge_page",
         "ledger_similar"}


def _data(result) -> dict:
    assert not result.is_error, result.content
    return result.structured_content or json.loads(result.content[0].text)


def _error_text(result) -> str:
    assert result.is_error, result.structured_content
    return " ".join(c.text for c in result.content)


async def _session_checks(params: StdioServerParameters, task, tmp_path) -> None:
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        assert {t.name for t in (await session.list_tools()).tools} >= TOOLS

        info = _data(await session.call_tool("task_info", {"task_dir": str(TASKS / "rmsnorm")}))
        assert "rmsnorm_bf16_h4096" in info["brief"]
        assert "def run" in info["reference"] and "def run" in info["baseline"]
        assert info["workloads"] and all(w["uuid"] and w["axes"] for w in info["workloads"])
        assert "triton_rowwise" in {s["name"] for s in info["solutions"]}

        good = _data(await session.call_tool("evaluate", {
            "task_dir": str(task), "solution_path": str(task / "solutions" / "triton_rowwise.py"), "no_timing": True}))
        assert good["solution"]["status"] == "PASSED", good["feedback"]
        assert isinstance(good["seed"], int) and good["solution"]["workloads"][0]["status"] == "PASSED"

        # a path relative to the task folder works too; the seed replays the same inputs
        bad = _data(await session.call_tool("evaluate", {
            "task_dir": str(task), "solution_path": "solutions/wrong/slightly_off.py", "no_timing": True,
            "seed": good["seed"]}))
        assert bad["solution"]["status"] == "INCORRECT_NUMERICAL", bad["feedback"]
        assert "worst at index" in bad["solution"]["reason"] and bad["seed"] == good["seed"]

        broken = _data(await session.call_tool("evaluate_source", {
            "task_dir": str(task), "source": "def run(x, weight:\n    return x\n", "no_timing": True}))
        assert broken["solution"]["status"] == "COMPILE_ERROR", broken["feedback"]

        runs = _data(await session.call_tool("ledger_runs", {}))
        assert runs["runs"] == [] and runs["ledger"].endswith("ledger.db")
        assert "no run 7" in _error_text(await session.call_tool("ledger_run", {"run_id": 7}))

        found = _data(await session.call_tool("knowledge_search", {"query": "fp8 conversion", "op_type": "quantize",
                                                                    "device": "NVIDIA H200", "limit": 3}))
        assert found["hits"][0]["id"].startswith("fp8-") and found["hits"][0]["claim"]
        page = _data(await session.call_tool("knowledge_page", {"page": found["hits"][0]["id"]}))
        assert set(page["sections"]) >= {"Claim", "Evidence", "How to apply"} and "results/" in page["sections"]["Evidence"]
        assert "no page has that id" in _error_text(await session.call_tool("knowledge_page", {"page": "nope"}))
        shutil.copy(FIXTURES / "ledgers" / "h200_design.db", tmp_path / "h200.db")
        similar = _data(await session.call_tool("ledger_similar", {
            "task_dir": str(TASKS / "kmeans_assign"), "db": f"sqlite:///{tmp_path / 'h200.db'}", "device": "H200",
            "limit": 1}))
        (best,) = similar["similar"]
        assert best["candidate_id"] == 19 and best["entry_fits"] and "@triton.jit" in best["sources"][0]["content"]

        missing = tmp_path / "no_such_task"
        assert str(missing) in _error_text(await session.call_tool("task_info", {"task_dir": str(missing)}))
        # the server survived the error and still answers
        again = _data(await session.call_tool("task_info", {"task_dir": str(task)}))
        assert len(again["workloads"]) == 1


def test_mcp_server_over_stdio(tmp_path):
    task = small_task("rmsnorm", tmp_path, [{"batch_size": 1}])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]),
               KERNELCRAFT_DB=f"sqlite:///{tmp_path / 'ledger.db'}")
    params = StdioServerParameters(
        command=sys.executable, args=["-c", "from kernelcraft.agent.mcp_server import serve; serve()"],
        env=env, cwd=str(tmp_path))
    asyncio.run(asyncio.wait_for(_session_checks(params, task, tmp_path), timeout=240))


async def _quiet_checks(params: StdioServerParameters, errlog) -> str:
    async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
        result = await session.initialize()
        runs = _data(await session.call_tool("ledger_runs", {}))  # opens (and so migrates) a new ledger
        assert runs["runs"] == []
        return result.server_info.version


def test_mcp_server_reports_its_version_and_keeps_alembic_quiet(tmp_path):
    """Issue 24: the server said no version, and every new ledger printed Alembic's INFO lines."""
    import kernelcraft

    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]),
               KERNELCRAFT_DB=f"sqlite:///{tmp_path / 'fresh.db'}")
    params = StdioServerParameters(command=sys.executable, args=["-m", "kernelcraft", "mcp"], env=env, cwd=str(tmp_path))
    with (tmp_path / "stderr.txt").open("w") as errlog:
        version = asyncio.run(asyncio.wait_for(_quiet_checks(params, errlog), timeout=120))
    assert version == kernelcraft.__version__
    assert (tmp_path / "fresh.db").is_file()  # the migrations did run
    stderr = (tmp_path / "stderr.txt").read_text()
    assert "alembic" not in stderr.lower() and "Running upgrade" not in stderr, stderr
