"""What a runner may say, as schemas. Its replies are claims from a process that runs candidate
code: each is validated here (types, sizes, finite numbers) before the judge reads a field of it, and
a reply that does not fit is a protocol violation, never a crash of the judge.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

Text = Annotated[str, Field(max_length=64_000)]
Ms = Annotated[float, Field(ge=0.0, allow_inf_nan=False)]


class _Reply(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    id: int


class BuildReply(_Reply):
    status: Literal["PASSED", "COMPILE_ERROR", "SKIPPED", "REJECTED"]
    reason: Text = ""


class OutputDesc(BaseModel):
    """What one output of a call was: a tensor (shape, dtype, device, whether it went into its slot)
    or a Python number."""

    model_config = ConfigDict(extra="forbid", strict=True)
    shape: Annotated[list[Annotated[int, Field(ge=0)]], Field(max_length=16)] | None = None
    dtype: Annotated[str, Field(max_length=32)] | None = None
    device: Annotated[str, Field(max_length=16)] | None = None
    stored: bool = False
    value: float | int | bool | None = None
    type: Annotated[str, Field(max_length=80)] | None = None  # a returned object that is neither


class CallReply(_Reply):
    error: Text = ""
    compile_error: bool = False
    outputs: Annotated[list[OutputDesc], Field(max_length=64)] = Field(default_factory=list)
    ops: dict[Annotated[str, Field(max_length=200)], Annotated[int, Field(ge=0)]] = Field(default_factory=dict)
    finding: Text = ""
    threads: Annotated[list[int], Field(min_length=2, max_length=2)] | None = None
    native_threads: Annotated[list[int], Field(min_length=2, max_length=2)] | None = None
    launches: dict[Annotated[str, Field(max_length=32)], Annotated[int, Field(ge=0)]] = Field(default_factory=dict)


Ops = dict[Annotated[str, Field(max_length=200)], Annotated[int, Field(ge=0)]]


class TimeReply(_Reply):
    error: Text = ""
    finding: Text = ""  # the runner's own finding against its candidate (it can only reject)
    graph: bool = False
    graph_error: Text = ""
    ops: Ops = Field(default_factory=dict)


class RepReply(_Reply):
    error: Text = ""
    finding: Text = ""
    ms: Ms | None = None
    noop_ms: Ms | None = None
    tail_ms: Ms | None = None
    noop_tail_ms: Ms | None = None
    ops: Ops = Field(default_factory=dict)  # an eager timed call's ops (a graph replay has none)


class CollectReply(_Reply):
    outputs: Annotated[list[OutputDesc], Field(max_length=64)] = Field(default_factory=list)
    finding: Text = ""


class EmptyReply(_Reply):
    pass


class ValidateReply(_Reply):
    """A request's validation command, run by the runner (a claim like every other: it can only reject)."""

    started: bool = True
    exit_code: int | None = None
    timed_out: bool = False
    output_tail: Text = ""
    error: Text = ""  # why it could not start


def parse(model: type[_Reply], msg: dict) -> _Reply:
    """The reply as ``model``, or :class:`ValueError` naming what was wrong with it."""
    try:
        return model.model_validate(msg)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ValueError(f"{model.__name__}: field {where!r}: {first['msg']}") from None
