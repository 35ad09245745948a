"""The openai and anthropic agents against real HTTP servers on loopback that speak each protocol.

Each server answers from a script (first a broken kernel, then a fixed one) and records the request
bodies, so the tests see what the official SDKs actually sent: the second request must carry the
first candidate's compiler error.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from kernelcraft.agent.base import AgentError, CandidateView, Context
from kernelcraft.agent.llm import AnthropicAgent, OpenAIAgent
from kernelcraft.agent.prompt import brief_and_history_prompt, solution_from_reply, strategy_line
from kernelcraft.task import load_task

ROOT = Path(__file__).resolve().parents[1]
COMPILER_ERROR = "error: unknown symbol tl.fancy_op at line 7"

BROKEN_KERNEL = '''\
"""RMSNorm, first try."""
import torch
import triton
import triton.language as tl


@triton.jit
def _rms_kernel(x_ptr, w_ptr, y_ptr, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=0.0).to(tl.float32)
    r = tl.fancy_op(x)  # BROKEN_MARKER
    tl.store(y_ptr + row * N + cols, r, mask=cols < N)


def run(hidden_states, weight, eps):
    out = torch.empty_like(hidden_states)
    _rms_kernel[(hidden_states.shape[0],)](hidden_states, weight, out, hidden_states.shape[1], eps, BLOCK=4096)
    return out
'''

FIXED_KERNEL = BROKEN_KERNEL.replace("first try", "fixed").replace(
    "r = tl.fancy_op(x)  # BROKEN_MARKER",
    "w = tl.load(w_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)\n"
    "    r = x * tl.rsqrt(tl.sum(x * x, axis=0) / N + eps) * w  # FIXED_MARKER",
)

REPLY_BROKEN = (
    "Plan: one program per row, the whole row in registers.\n"
    "Load, square, sum in fp32, scale.\n\n"
    "A helper sketch:\n```python\nx = 1\n```\n\n"
    "The file:\n```python\n" + BROKEN_KERNEL + "```\n"
)
REPLY_FIXED = (
    "## Fix the unknown op: compute rsqrt(mean(x^2) + eps) explicitly\n"
    "tl.fancy_op does not exist; use tl.sum and tl.rsqrt.\n\n"
    "```\n" + FIXED_KERNEL + "```\n"
)
REPLY_NO_CODE = "I would use one program per row, but I have no code today."


class _Server:
    """A ThreadingHTTPServer on 127.0.0.1:0 answering POSTs from a script and recording the bodies."""

    def __init__(self, make_body):
        self.make_body = make_body  # (reply text, request json) -> response json
        self.replies: list[tuple[int, object]] = []  # (status, reply text or error json)
        self.requests: list[dict] = []  # {"path", "headers", "body"}
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's naming
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                body = json.loads(raw)
                headers = {k.lower(): v for k, v in self.headers.items()}
                server.requests.append({"path": self.path, "headers": headers, "body": body})
                status, reply = server.replies.pop(0) if server.replies else (500, {"error": "script exhausted"})
                payload = server.make_body(reply, body) if status == 200 else reply
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(5)


def _chat_completion(text: str, req: dict) -> dict:
    return {
        "id": "chatcmpl-test", "object": "chat.completion", "created": 1700000000, "model": req["model"],
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop",
                     "logprobs": None}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
    }


def _message(text: str, req: dict) -> dict:
    return {
        "id": "msg_test", "type": "message", "role": "assistant", "model": req["model"],
        "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 10},
    }


def _no_proxy(monkeypatch) -> None:
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


@pytest.fixture
def openai_server(monkeypatch) -> Iterator[_Server]:
    srv = _Server(_chat_completion)
    _no_proxy(monkeypatch)
    monkeypatch.setenv("OPENAI_BASE_URL", srv.url + "/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "test-openai-key")
    yield srv
    srv.close()


@pytest.fixture
def anthropic_server(monkeypatch) -> Iterator[_Server]:
    srv = _Server(_message)
    _no_proxy(monkeypatch)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", srv.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-anthropic-key")
    yield srv
    srv.close()


@pytest.fixture(scope="module")
def task():
    return load_task(ROOT / "tasks" / "rmsnorm")


def _ctx(task) -> Context:
    return Context(task=task, device="cpu", brief="RMSNorm over rows of 4096 bf16 values; beat the baseline.")


def _record_failure(ctx: Context, proposal, agent_name: str) -> None:
    ctx.history.append(CandidateView(
        id=1, parent=proposal.parent, agent=agent_name, strategy=proposal.strategy, status="COMPILE_ERROR",
        speedup_vs_baseline=None,
        feedback=f"status: COMPILE_ERROR (gate: build)\nreason:\n{COMPILER_ERROR}\n  r = tl.fancy_op(x)",
        solution=proposal.solution,
    ))


def _user_text_openai(body: dict) -> str:
    return "\n".join(m["content"] for m in body["messages"] if m["role"] == "user")


def _user_text_anthropic(body: dict) -> str:
    msgs = body["messages"]
    return "\n".join(m["content"] if isinstance(m["content"], str) else
                     "".join(b.get("text", "") for b in m["content"]) for m in msgs)


def _entry(solution) -> str:
    assert len(solution.sources) == 1
    return solution.sources[0].content


@pytest.mark.parametrize("flavour", ["openai", "anthropic"])
def test_broken_then_fixed_with_feedback(flavour, task, request):
    srv = request.getfixturevalue(f"{flavour}_server")
    srv.replies = [(200, REPLY_BROKEN), (200, REPLY_FIXED)]
    agent = OpenAIAgent("test-model") if flavour == "openai" else AnthropicAgent("claude-test")
    user_text = _user_text_openai if flavour == "openai" else _user_text_anthropic
    ctx = _ctx(task)

    first = agent.propose(ctx)
    assert "BROKEN_MARKER" in _entry(first.solution)
    assert "x = 1\n" != _entry(first.solution)  # the last block, not the sketch
    assert first.solution.spec.language == "triton"
    assert first.solution.spec.destination_passing_style is False
    assert first.solution.spec.entry_point.endswith("::run")
    assert first.solution.definition == task.definition.name
    assert first.solution.author == agent.name
    assert first.solution.name.endswith("-1")
    assert first.parent is None
    assert first.plan.startswith("Plan: one program per row")
    assert "A helper sketch" in first.plan and "BROKEN_MARKER" not in first.plan
    assert first.strategy == "one program per row, the whole row in registers."

    _record_failure(ctx, first, agent.name)
    second = agent.propose(ctx)
    assert "FIXED_MARKER" in _entry(second.solution) and "BROKEN_MARKER" not in _entry(second.solution)
    assert second.solution.spec.language == "triton"
    assert second.solution.name.endswith("-2")
    assert second.parent == 1
    assert second.plan.startswith("## Fix the unknown op")
    assert second.strategy == "Fix the unknown op: compute rsqrt(mean(x^2) + eps) explicitly"

    # What went over the wire.
    assert len(srv.requests) == 2
    first_req, second_req = (r["body"] for r in srv.requests)
    if flavour == "openai":
        assert all(r["path"] == "/v1/chat/completions" for r in srv.requests)
        assert srv.requests[0]["headers"].get("authorization") == "Bearer test-openai-key"
        assert first_req["model"] == "test-model"
        assert first_req["messages"][0]["role"] == "system"
        system = first_req["messages"][0]["content"]
    else:
        assert all(r["path"] == "/v1/messages" for r in srv.requests)
        headers = srv.requests[0]["headers"]  # the SDK sends the key as x-api-key or as a bearer token
        assert "test-anthropic-key" in (headers.get("x-api-key", ""), headers.get("authorization", "")[7:])
        assert first_req["model"] == "claude-test"
        assert 1000 <= first_req["max_tokens"] <= 64000
        system = first_req["system"] if isinstance(first_req["system"], str) else first_req["system"][0]["text"]
    assert "@triton.jit" in system and "LAST fenced" in system
    first_user, second_user = user_text(first_req), user_text(second_req)
    assert "RMSNorm over rows of 4096" in first_user
    assert "def run(" in first_user  # the reference
    assert "rms_norm" in first_user  # the baseline
    assert COMPILER_ERROR not in first_user
    assert COMPILER_ERROR in second_user
    assert "COMPILE_ERROR" in second_user and "BROKEN_MARKER" in second_user  # the failing source too


@pytest.mark.parametrize("flavour,var", [("openai", "OPENAI_API_KEY"), ("anthropic", "ANTHROPIC_API_KEY")])
def test_missing_key_names_the_variable(flavour, var, monkeypatch):
    monkeypatch.delenv(var, raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    cls = OpenAIAgent if flavour == "openai" else AnthropicAgent
    with pytest.raises(AgentError, match=var):
        cls("some-model")


@pytest.mark.parametrize("flavour", ["openai", "anthropic"])
def test_reply_without_code_block_is_an_agent_error(flavour, task, request):
    srv = request.getfixturevalue(f"{flavour}_server")
    srv.replies = [(200, REPLY_NO_CODE)]
    agent = OpenAIAgent("m") if flavour == "openai" else AnthropicAgent("m")
    with pytest.raises(AgentError, match="no fenced code block"):
        agent.propose(_ctx(task))


def test_api_errors_carry_status_and_message(openai_server, anthropic_server, task):
    openai_server.replies = [(404, {"error": {"message": "model 'nope' not found", "type": "invalid_request_error"}})]
    with pytest.raises(AgentError, match=r"404.*model 'nope' not found"):
        OpenAIAgent("nope").propose(_ctx(task))
    anthropic_server.replies = [(400, {"type": "error", "error": {"type": "invalid_request_error",
                                                                  "message": "max_tokens too large"}})]
    with pytest.raises(AgentError, match=r"400.*max_tokens too large"):
        AnthropicAgent("m").propose(_ctx(task))


def test_solution_from_reply_forms(task):
    ctx = _ctx(task)
    sol, plan = solution_from_reply("Plain python.\n~~~py\ndef run(x):\n    return x\n~~~\n", ctx, "n-1", "me")
    assert sol.spec.language == "python" and plan == "Plain python."
    assert sol.sources[0].content == "def run(x):\n    return x\n"
    # the last *python* block wins over a trailing shell snippet; untagged fences count as python
    sol, _ = solution_from_reply("x\n```\ndef run(a):\n    return a\n```\nrun it:\n```bash\nkernelcraft eval\n```",
                                 ctx, "n-2", "me")
    assert "def run(a)" in sol.sources[0].content
    with pytest.raises(AgentError, match="no fenced code block.*cuda"):
        solution_from_reply("```cuda\n__global__ void k() {}\n```", ctx, "n-3", "me")
    long_plan = "step\n" * 2000
    _, plan = solution_from_reply(long_plan + "```python\ndef run(x):\n    return x\n```", ctx, "n-4", "me")
    assert len(plan) <= 2100
    assert strategy_line("\n\n**Strategy:** " + "w" * 300) == "w" * 97 + "..."


def test_prompt_is_bounded_and_shows_the_best(task):
    ctx = _ctx(task)
    sol, _ = solution_from_reply(REPLY_FIXED, ctx, "a-1", "me")
    huge = "E" * 100_000
    for i in range(1, 41):
        ctx.history.append(CandidateView(
            id=i, parent=None, agent="me", strategy=f"idea {i}", status="PASSED" if i % 10 == 0 else "INCORRECT_NUMERICAL",
            speedup_vs_baseline=float(i) / 10 if i % 10 == 0 else None, feedback=huge + f" worst element {i}",
            solution=sol,
        ))
    system, user = brief_and_history_prompt(ctx)
    assert len(system) + len(user) < 80_000
    assert "Best candidate so far: #40" in user and "Candidate ranked 2: #30" in user
    assert "idea 39" in user and "older candidates not listed" in user
    assert "worst element 40" in user


def test_optimize_loop_feeds_the_gauntlets_error_back(openai_server, tmp_path):
    """End to end through `kernelcraft optimize`: the first reply's kernel fails in the gauntlet, and
    the second request to the model carries that failure as the gauntlet reported it."""
    import sys

    sys.path.insert(0, str(ROOT / "tests"))
    from conftest import kc, small_task

    t = small_task("rmsnorm", tmp_path, [{"batch_size": 2}])
    openai_server.replies = [(200, REPLY_BROKEN), (200, REPLY_FIXED)]
    out = tmp_path / "run.json"
    proc = kc("optimize", t, "--agent", "openai:test-model", "--budget", "2", "--device", "cpu",
              "--db", f"sqlite:///{tmp_path / 'l.db'}", "--budget-ms", "20", "--json", out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    run = json.loads(out.read_text())
    first, second = run["candidates"][1:]
    assert first["status"] in ("RUNTIME_ERROR", "COMPILE_ERROR") and second["status"] == "PASSED"
    assert second["parent"] == first["id"]
    assert len(openai_server.requests) == 2
    asked_again = _user_text_openai(openai_server.requests[1]["body"])
    assert "fancy_op" in asked_again and first["status"] in asked_again
    assert "fancy_op" not in _user_text_openai(openai_server.requests[0]["body"])
