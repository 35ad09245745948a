"""Model agents over the official SDKs: ``openai:MODEL`` (chat completions) and ``anthropic:MODEL``.

Each proposal is one stateless request: the prompt of :mod:`kernelcraft.agent.prompt` (brief,
reference, baseline, best candidates, the last candidate's feedback) in, a plan and the complete
solution file (the reply's last fenced code block) out.

``openai.OpenAI()`` reads ``OPENAI_API_KEY`` and ``OPENAI_BASE_URL`` (a local server such as vLLM,
llama.cpp or Ollama: ``http://host:port/v1``, any key); ``anthropic.Anthropic()`` reads
``ANTHROPIC_API_KEY`` and ``ANTHROPIC_BASE_URL``.
"""

from __future__ import annotations

import os
import re

from kernelcraft.agent.base import AgentError, Context, Proposal
from kernelcraft.agent.prompt import brief_and_history_prompt, solution_from_reply, strategy_line

TIMEOUT_S = 300.0
MAX_RETRIES = 2
ANTHROPIC_MAX_TOKENS = 8000


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-") or "model"


def _parent(ctx: Context) -> int | None:
    return ctx.default_parent


def _proposal(agent: _ModelAgent, ctx: Context, reply: str, truncated: bool) -> Proposal:
    name = f"{agent.prefix}-{len(ctx.history) + 1}"
    try:
        solution, plan = solution_from_reply(reply, ctx, name=name, author=agent.name)
    except AgentError as e:
        if truncated:
            raise AgentError(f"{e} (the reply was cut off at the token limit)") from None
        raise
    return Proposal(solution=solution, parent=_parent(ctx), plan=plan, strategy=strategy_line(plan))


class _ModelAgent:
    name: str
    prefix: str

    def _complete(self, system: str, user: str) -> tuple[str, bool]:
        """The reply text, and whether it was cut off at the token limit."""
        raise NotImplementedError

    def propose(self, ctx: Context) -> Proposal:
        system, user = brief_and_history_prompt(ctx)
        reply, truncated = self._complete(system, user)
        return _proposal(self, ctx, reply, truncated)


class OpenAIAgent(_ModelAgent):
    """A model behind an OpenAI-compatible chat-completions endpoint."""

    def __init__(self, model: str, *, max_tokens: int | None = None,
                 timeout: float = TIMEOUT_S, max_retries: int = MAX_RETRIES):
        if not model:
            raise AgentError("openai agent needs a model name: --agent openai:MODEL")
        if not os.environ.get("OPENAI_API_KEY"):
            raise AgentError(
                "set OPENAI_API_KEY (any value for a local server) to use --agent openai:MODEL; "
                "set OPENAI_BASE_URL (e.g. http://localhost:8000/v1) for a local or other compatible server"
            )
        import openai

        self.model = model
        self.name = f"openai:{model}"
        self.prefix = f"openai-{_slug(model)}"
        self.max_tokens = max_tokens
        self._openai = openai
        try:
            self.client = openai.OpenAI(timeout=timeout, max_retries=max_retries)
        except openai.OpenAIError as e:
            raise AgentError(f"{self.name}: cannot create the OpenAI client: {e}") from None

    def _complete(self, system: str, user: str) -> tuple[str, bool]:
        openai = self._openai
        extra = {"max_completion_tokens": self.max_tokens} if self.max_tokens else {}
        try:
            resp = self.client.chat.completions.create(
                model=self.model,
                messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
                **extra,
            )
        except openai.APIStatusError as e:
            raise AgentError(f"{self.name}: HTTP {e.status_code} from {self.client.base_url}: {e.message}") from None
        except openai.APIConnectionError as e:
            raise AgentError(f"{self.name}: cannot reach {self.client.base_url}: {e}") from None
        except openai.OpenAIError as e:
            raise AgentError(f"{self.name}: {type(e).__name__}: {e}") from None
        if not resp.choices:
            raise AgentError(f"{self.name}: the response had no choices")
        choice = resp.choices[0]
        content = choice.message.content
        if not content:
            refusal = getattr(choice.message, "refusal", None)
            raise AgentError(f"{self.name}: empty reply (finish_reason={choice.finish_reason}"
                             + (f", refusal: {refusal}" if refusal else "") + ")")
        return content, choice.finish_reason == "length"


class AnthropicAgent(_ModelAgent):
    """A Claude model over the Anthropic messages API."""

    def __init__(self, model: str, *, max_tokens: int = ANTHROPIC_MAX_TOKENS,
                 timeout: float = TIMEOUT_S, max_retries: int = MAX_RETRIES):
        if not model:
            raise AgentError("anthropic agent needs a model name: --agent anthropic:MODEL")
        if not (os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("ANTHROPIC_AUTH_TOKEN")):
            raise AgentError(
                "set ANTHROPIC_API_KEY to use --agent anthropic:MODEL "
                "(ANTHROPIC_BASE_URL points the agent at another compatible server)"
            )
        import anthropic

        self.model = model
        self.name = f"anthropic:{model}"
        self.prefix = f"anthropic-{_slug(model)}"
        self.max_tokens = max_tokens
        self._anthropic = anthropic
        try:
            self.client = anthropic.Anthropic(timeout=timeout, max_retries=max_retries)
        except anthropic.AnthropicError as e:
            raise AgentError(f"{self.name}: cannot create the Anthropic client: {e}") from None

    def _complete(self, system: str, user: str) -> tuple[str, bool]:
        anthropic = self._anthropic
        try:
            resp = self.client.messages.create(
                model=self.model,
                max_tokens=self.max_tokens,
                system=system,
                messages=[{"role": "user", "content": user}],
            )
        except anthropic.APIStatusError as e:
            raise AgentError(f"{self.name}: HTTP {e.status_code} from {self.client.base_url}: {e.message}") from None
        except anthropic.APIConnectionError as e:
            raise AgentError(f"{self.name}: cannot reach {self.client.base_url}: {e}") from None
        except anthropic.AnthropicError as e:
            raise AgentError(f"{self.name}: {type(e).__name__}: {e}") from None
        text = "".join(getattr(b, "text", "") for b in resp.content if getattr(b, "type", "") == "text")
        if not text:
            raise AgentError(f"{self.name}: the reply had no text (stop_reason={resp.stop_reason})")
        return text, resp.stop_reason == "max_tokens"
