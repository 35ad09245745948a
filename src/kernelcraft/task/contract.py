"""``contract.toml``: what kernelcraft adds to a FlashInfer-Trace task, every field with a default.

A task folder without ``contract.toml`` (a KDA wishlist request, a FlashInfer-Trace entry) gets
exactly these defaults:

- ``[tolerance.<dtype>]`` atol / rtol per output dtype: :data:`kernelcraft.task.dtypes.DEFAULT_TOLERANCE`
  (bfloat16 1e-2 / 1.6e-2, float16 1e-3 / 2e-3, float32 1e-5 / 1e-4, integers and bool exact).
  ``[tolerance.output.<name>]`` overrides one output. An element fails when its error exceeds both
  bounds; there is no fraction of elements allowed to fail.
- ``[weights]`` workload uuid -> weight in the geometric mean; every workload 1.0 by default.
- ``[inputs.<name>]`` how a ``random`` input is drawn: ``dist = "normal"`` (mean, std),
  ``"uniform"`` (low, high), ``"randint"`` (low inclusive, high exclusive), ``"softmax"`` (normal
  draws, then softmax over the last dim: probabilities, as FlashInfer-Bench draws a sampler's
  ``probs``) or ``"offsets"`` (a 1-d int input ``[batch + 1]`` of non-decreasing offsets from 0 to
  ``total``, an axis expression; segments of at least 1 when total allows; ``within = "other"``
  keeps each segment no longer than the other offsets input's: FlashInfer's ``qo_indptr`` within
  ``kv_indptr``). Bounds and totals may be expressions over axis names. Default per dtype:
  floats N(0, 1); int8 randint[-128, 128); other ints randint[-1024, 1024); uint8 randint[0, 256);
  bool randint[0, 2) (FlashInfer-Bench's choices), kept within the bounds the definition's
  constraints put on the input's values (``0 <= h < 16``: :mod:`kernelcraft.task.inputs`).
  ``outliers`` true, ``near_zero_rows`` true, ``outlier_magnitude`` [100, 1000]: the stress variant
  of a floating input (a few entries per row at |x| in that range times std, rows scaled to near
  zero); set false where the input's meaning rules them out, and say why.
- ``[limits]`` ``build_timeout_s`` 900 (a torch extension build can take minutes),
  ``workload_timeout_s`` 300 (one workload's correctness run, reference included, or its timing).
- ``[timing]`` ``budget_ms`` 500 per timed function per workload, ``min_reps`` 10, ``max_reps`` 1000,
  ``warmup`` 3 calls.
- ``[promotion]`` ``min_speedup_vs_baseline`` 1.0: a candidate may be promoted when it passes every
  gate and its weighted geometric-mean speedup over the baseline is at least this.
  ``require_approval`` false: when true, a candidate is promoted only after a person has approved
  its exact source (``kernelcraft approve CANDIDATE --by NAME``, recorded in the ledger).
- ``[integrity]`` ``deterministic`` true (outputs bit-identical on repeat), ``allowed_torch_ops`` []
  (aten op names a candidate may call besides allocation, views and metadata), ``allow_device_sync``
  false (true: C/C++ sources may call ``cudaDeviceSynchronize``, as FlashInfer-Trace's CUDA
  solutions do; a sync lets no work escape the timer).
- ``[generalization]`` ``holdouts`` 3 (holdout shapes drawn per run over the whole range the
  definition's constraints allow: above the largest workload, between adjacent workloads, powers of
  two and their neighbours, log-uniform; odd and even-not-a-multiple-of-16 sizes; several axes at
  once; :mod:`kernelcraft.gauntlet.holdout`), ``shapes`` [] (fixed extra holdouts, each a table of
  var-axis values), ``stress`` 2 (workloads run again on stress inputs; 0: none).
- ``[roofline]`` the bytes/FLOP model of speed-of-light fractions: ``bytes`` and ``flops`` are
  arithmetic expressions over the axis names (default bytes: every tensor input read once and every
  output written once; default flops: 0, a memory-bound task); ``flops_dtype`` names the calibrated
  matrix throughput the FLOPs run at (default: the first floating input's dtype); ``max_sol`` 1.25:
  a time faster than the device's measured floor divided by this is REJECTED as impossible.
- ``[[check]]`` how outputs are judged, one table per checker (default: none, every output by
  ``tolerance``). ``kind`` picks a checker of :mod:`kernelcraft.gauntlet.checkers`: ``tolerance``
  (the element-wise check above) and ``exact`` (bitwise / integer equality) name their ``outputs``;
  ``topk`` (set-valued: values + indices of the largest entries per row of an input),
  ``argmin`` (an index per row whose objective, e.g. the squared distance to the chosen centroid, is
  within ``atol + rtol * scale`` of the best one) and ``balanced_kmeans`` (capacities, objective
  within ``objective_rtol`` of the reference's, centroids consistent with the assignment) name the
  inputs and outputs they read; ``sampling`` (a sampler's indices: each sample inside the top-k /
  top-p set, the frequencies over many draws within a total-variation distance of the kept
  probabilities, FlashInfer-Bench's rule). ``tolerance`` takes ``min_matched_ratio`` (default 1:
  every element; FlashInfer-Bench's low-bit MoE evaluator uses 0.95). An output no checker names
  is judged by ``tolerance``.
  ``python`` names a function of the task folder (``"benchmark.py::judge"``, a KDA request's own
  verifier) called in the judge process with ``args`` (default ``["outputs", "reference"]``;
  ``"inputs"`` and ``"NAME(inputs)"``, a function of the same file applied to the inputs, may be
  named too) and returning ``(ok, worst_ratio)``; it judges ``outputs`` (default: all of them) and
  the record keeps the worst ratio per workload. ``reference = "native"`` (default) hands it the
  reference run in the inputs' own precision, as a request's benchmark runs it.
- ``[inputs] generator`` the task's own input generator, a function of a Python file in the task
  folder (``"benchmark.py::random_inputs"``, a KDA request's; ``"inputs.py::make_inputs"``, what
  ``import kernelbench`` writes around the problem's ``get_inputs()``): trusted task code, called
  in the judge (never in a candidate's runner) as ``fn(*axis values, device, seed=seed)`` (the var
  axes in definition order, or the ``axes`` listed; a ``torch.device``; a seed drawn from the run's
  seed and the workload) and returning the inputs in definition order: every correctness check and
  every timed call then draws from the task's domain instead of ``[inputs.<name>]`` (no such table
  may be given with it). An item may be None where the workload gives that input (``scalar`` or
  ``safetensors``: the workload's value is used). Tensors must have the definition's shapes and
  dtypes on the judge's device, and the definition's value constraints are checked on what comes
  back. ``[[inputs.sets]]`` adds named input sets each correctness check also runs: ``generator``
  called the same way, or with ``after = "NAME"`` called as ``fn(inputs of set NAME, reference
  outputs on them, device, seed)`` (the next decode step built from the reference's output).
- ``[validate]`` a request's own verifier as one more gate (:mod:`kernelcraft.gauntlet.validate`):
  ``command`` with ``{task}`` / ``{solution}`` placeholders, run in the candidate's sandboxed runner
  after kernelcraft's checks, passing when it exits 0 within ``timeout_s``. It can only reject.
- ``target_hardware`` list of device names the task is meant for (informational), default any.
"""

from __future__ import annotations

import dataclasses
import re
import tomllib
from pathlib import Path
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from kernelcraft.errors import InputError, Problem
from kernelcraft.task.dtypes import DEFAULT_TOLERANCE, DType


class _Strict(BaseModel):
    # A typo in a contract must be an error, not a silently ignored default.
    model_config = ConfigDict(extra="forbid")


class Tolerance(_Strict):
    atol: float = Field(ge=0)
    rtol: float = Field(ge=0)


class Tolerances(_Strict):
    model_config = ConfigDict(extra="forbid")
    output: dict[str, Tolerance] = Field(default_factory=dict)
    # one optional table per dtype name
    float64: Tolerance | None = None
    float32: Tolerance | None = None
    float16: Tolerance | None = None
    bfloat16: Tolerance | None = None
    float8_e4m3fn: Tolerance | None = None
    float8_e5m2: Tolerance | None = None

    def for_output(self, name: str, dtype: DType) -> Tolerance:
        if name in self.output:
            return self.output[name]
        specific = getattr(self, dtype, None)
        if specific is not None:
            return specific
        atol, rtol = DEFAULT_TOLERANCE[dtype]
        return Tolerance(atol=atol, rtol=rtol)


def _axis_expression(v: float | str) -> float | str:
    if isinstance(v, str):
        from kernelcraft.task.definition import parse_constraint

        parse_constraint(v)  # arithmetic over axis names only
    return v


class InputDistribution(_Strict):
    # None: the default for the input's dtype, within the bounds the definition's constraints state
    dist: Literal["normal", "uniform", "randint", "offsets", "softmax"] | None = None
    mean: float = 0.0
    std: float = 1.0
    # a number, or an expression over axis names ("vocab_size"): a target index in [0, vocab_size)
    low: float | str = 0.0
    high: float | str = 1.0
    # The stress variant of a floating input (kernelcraft.task.inputs): a few entries per row at
    # |x| in outlier_magnitude (times std), and rows scaled to near zero. Off where the input's
    # meaning makes them out of its domain; the contract says why.
    outliers: bool = True
    near_zero_rows: bool = True
    outlier_magnitude: tuple[float, float] = (100.0, 1000.0)
    # "offsets": the last value (an axis expression, e.g. "num_kv_indices"); the first is 0
    total: int | str | None = None
    # "offsets": another "offsets" input whose segments bound this one's (a prefill's queries see at
    # least their own keys: qo_indptr within kv_indptr)
    within: str | None = None

    @field_validator("low", "high", "total")
    @classmethod
    def _safe(cls, v: float | str | None) -> float | str | None:
        return v if v is None else _axis_expression(v)

    @model_validator(mode="after")
    def _offsets(self) -> InputDistribution:
        if self.dist == "offsets" and self.total is None:
            raise ValueError('dist = "offsets" needs total (the last offset: an axis expression such as "total_q")')
        if self.dist != "offsets" and (self.total is not None or self.within is not None):
            raise ValueError('total and within belong to dist = "offsets"')
        return self

    @field_validator("outlier_magnitude")
    @classmethod
    def _magnitude(cls, v: tuple[float, float]) -> tuple[float, float]:
        if not 0 < v[0] <= v[1]:
            raise ValueError(f"outlier_magnitude {list(v)} must be [low, high] with 0 < low <= high")
        return v

    def bounds(self, axes: dict[str, int]) -> tuple[float, float]:
        from kernelcraft.task.definition import eval_expression

        return tuple(float(eval_expression(v, axes)) if isinstance(v, str) else float(v)
                     for v in (self.low, self.high))


class Limits(_Strict):
    build_timeout_s: float = Field(default=900.0, gt=0)
    workload_timeout_s: float = Field(default=300.0, gt=0)


class TimingPolicy(_Strict):
    budget_ms: float = Field(default=500.0, gt=0)
    min_reps: int = Field(default=10, ge=1)
    max_reps: int = Field(default=1000, ge=1)
    warmup: int = Field(default=3, ge=1)
    # time the task's reference beside each row ("x reference"). False where the reference is an oracle whose speed
    # nobody compares against (a token-by-token loop): it is captured and replayed in every row's timing phase
    # per workload (0.6-0.7 s a call at 8192 tokens of gdn_prefill on an H100), and timing runs one job at a time
    time_reference: bool = True


class Promotion(_Strict):
    min_speedup_vs_baseline: float = Field(default=1.0, gt=0)
    # also beat the fastest trusted row of the run (torch.compile, every peer) by this factor; None: not asked
    min_speedup_vs_best_peer: float | None = Field(default=None, gt=0)
    require_approval: bool = False  # promote only what a person approved (`kernelcraft approve`)


class Integrity(_Strict):
    deterministic: bool = True  # two runs on identical inputs must agree bit for bit
    allowed_torch_ops: list[str] = Field(default_factory=list)  # aten op names a candidate may call
    # C/C++ sources may call cudaDeviceSynchronize (FlashInfer-Trace's CUDA solutions do): a device-wide
    # sync inside the call lets no work escape the timer, it only costs the candidate time
    allow_device_sync: bool = False


class Generalization(_Strict):
    holdouts: int = Field(default=3, ge=0)  # shapes drawn per run, unseen by the candidate's author
    shapes: list[dict[str, int]] = Field(default_factory=list)  # extra fixed holdouts: var-axis values
    stress: int = Field(default=2, ge=0)  # workloads re-run on stress inputs (outliers, near-zero rows)


class Roofline(_Strict):
    bytes: str | None = None  # expression over axis names; None: inputs read once + outputs written once
    flops: str | None = None  # expression over axis names; None: 0
    flops_dtype: str | None = None  # key of the calibration's matmul_tflops; None: first floating input's dtype
    max_sol: float = Field(default=1.25, gt=1.0)  # faster than floor / max_sol is impossible

    @field_validator("bytes", "flops")
    @classmethod
    def _safe(cls, v: str | None) -> str | None:
        if v is not None:
            from kernelcraft.task.definition import parse_constraint

            parse_constraint(v)  # arithmetic over axis names only
        return v


class ToleranceCheck(_Strict):
    """Element-wise: an element fails when its error exceeds both atol and rtol * |reference|."""
    kind: Literal["tolerance"]
    outputs: list[str] = Field(min_length=1)
    # the share of each output's elements that must pass (FlashInfer-Bench's required_matched_ratio,
    # 0.95 for its low-bit MoE evaluator); 1.0: every element. NaN/Inf disagreements always fail.
    min_matched_ratio: float = Field(default=1.0, gt=0, le=1)


class ExactCheck(_Strict):
    """Bit-for-bit equality with the reference rounded to the output's dtype (integers: equality)."""
    kind: Literal["exact"]
    outputs: list[str] = Field(min_length=1)


class TopKCheck(_Strict):
    """Set-valued top-k along the last dim of ``input``: any valid answer passes, ties in any order."""
    kind: Literal["topk"]
    input: str  # the tensor the top-k is taken of, [..., n]
    values: str  # output [..., k]: must equal input.gather(indices) and the reference's values within [tolerance]
    indices: str  # output [..., k]: in [0, n), unique per row
    largest: bool = True
    sorted: bool = True  # values must be ordered (descending when largest) along the last dim


class ArgminCheck(_Strict):
    """One index per row of ``points`` into the rows of ``centroids``, judged by its objective."""
    kind: Literal["argmin"]
    index: str  # output [n], an integer dtype
    points: str  # input [n, d]
    centroids: str  # input [k, d]
    objective: Literal["sq_euclidean"] = "sq_euclidean"
    # chosen - best <= atol + rtol * scale, scale = |x_i|^2 + max_j |c_j|^2 (what rounding errors of the
    # expanded distance |x|^2 - 2 x.c + |c|^2 grow with)
    atol: float = Field(default=0.0, ge=0)
    rtol: float = Field(default=1e-6, ge=0)


class BalancedKMeansCheck(_Strict):
    """One balanced k-means step: validity (indices in range, at most ceil(n/k) points per cluster),
    quality (assignment objective within ``objective_rtol`` of the reference's), and centroids equal
    to the mean of the points assigned to them (within [tolerance] of that output)."""
    kind: Literal["balanced_kmeans"]
    points: str  # input [n, d]
    centroids: str  # input [k, d]: the centroids the assignment is made against
    assignment: str  # output [n], an integer dtype
    new_centroids: str  # output [k, d]: mean of each cluster's points; an empty cluster keeps its centroid
    objective_rtol: float = Field(default=1e-3, ge=0)
    # Where the objective is above that: the assignment still passes when it is what the deferred
    # acceptance gives with the near-ties (distances within distance_rtol * (|x|^2 + max |c|^2) of
    # each other) resolved otherwise (gauntlet/checkers.py::_replay_deferred_acceptance); None: no replay.
    distance_rtol: float | None = Field(default=None, ge=0)


def _task_function(v: str) -> str:
    """``"file.py::function"``: a function of a Python file inside the task folder."""
    file, sep, fn = v.partition("::")
    if not sep or not file.endswith(".py") or not fn.isidentifier() or file.startswith("/") or ".." in file.split("/"):
        raise ValueError(f"{v!r} must look like 'benchmark.py::function' (a file inside the task folder)")
    return v


TaskFunction = Annotated[str, AfterValidator(_task_function)]
_ARG = re.compile(r"^(outputs|reference|inputs)$|^([A-Za-z_][A-Za-z0-9_]*)\((outputs|reference|inputs)\)$")


class PythonCheck(_Strict):
    """A request's own verifier, ``fn(*args) -> (ok, worst_ratio)``, run in the judge process."""
    kind: Literal["python"]
    function: TaskFunction
    outputs: list[str] = Field(default_factory=list)  # the outputs it judges; [] = every output
    # what it is called with, in order: the candidate's outputs, the reference's, the inputs (each a
    # list in definition order), or NAME(x): a function of the same file applied to one of them
    args: list[str] = Field(default_factory=lambda: ["outputs", "reference"], min_length=1)
    reference: Literal["native", "float64"] = "native"

    @field_validator("args")
    @classmethod
    def _args(cls, v: list[str]) -> list[str]:
        for a in v:
            if not _ARG.match(a):
                raise ValueError(f"{a!r}: each arg is outputs, reference, inputs or NAME(outputs|reference|inputs)")
        return v


class SamplingCheck(_Strict):
    """A sampler (FlashInfer-Bench's sampling evaluator): every sample an index of ``probs``' last dim that
    the thresholding keeps (top-k with ties, top-p within ``top_p_eps`` of the nucleus), and the samples'
    frequencies within total-variation distance ``tvd`` of the renormalised kept probabilities, per row,
    over ``samples_per_row`` draws (``probs`` tiled to ``batch_rows`` rows per call)."""
    kind: Literal["sampling"]
    samples: str  # output [batch] (or a scalar for one row): the drawn indices
    probs: str  # input [batch, vocab]: probabilities
    top_k: str | None = None  # input [batch] int: per-row k (k <= 0 or k >= vocab: no top-k)
    top_p: str | None = None  # input [batch] float: per-row p (p <= 0 or p >= 1: no top-p)
    tvd: float = Field(default=0.2, gt=0, le=1)  # FlashInfer-Bench's sampling_tvd_threshold
    samples_per_row: int = Field(default=500_000, ge=1)  # FlashInfer-Bench's num_trials
    batch_rows: int = Field(default=10_000, ge=1)  # rows per call (the batch tiled up to this)
    top_p_eps: float = Field(default=0.05, ge=0)  # nucleus slack for the validity mask


Check = Annotated[ToleranceCheck | ExactCheck | TopKCheck | ArgminCheck | BalancedKMeansCheck | PythonCheck
                  | SamplingCheck,
                  Field(discriminator="kind")]


class InputSet(_Strict):
    """One more set of inputs every correctness check runs (a request's edge cases, its next step)."""
    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.-]+$")
    generator: TaskFunction
    after: str | None = None  # chained: called with (that set's inputs, the reference's outputs on them, device, seed)


class InputGenerator(_Strict):
    """``[inputs] generator`` / ``axes`` / ``[[inputs.sets]]`` (moved here from the ``[inputs]`` table)."""
    generator: TaskFunction | None = None
    axes: list[str] | None = None  # the positional axis arguments; None: the var axes in definition order
    sets: list[InputSet] = Field(default_factory=list)

    @model_validator(mode="after")
    def _sets(self) -> InputGenerator:
        seen: set[str] = set()
        for i, s in enumerate(self.sets):
            if s.name in seen or s.name == "default":
                raise ValueError(f"sets.{i}.name: {s.name!r} is used twice (or is 'default', the generator's own set)")
            if s.after is not None and s.after not in seen and s.after != "default":
                raise ValueError(f"sets.{i}.after: {s.after!r} is not a set defined before it (or 'default')")
            seen.add(s.name)
        return self


class Validate(_Strict):
    """A request's own verifier command, run in the candidate's sandboxed runner (it can only reject)."""
    command: str = Field(min_length=1)
    # the command's time limit; with a minute for the runner's start-up it must fit the workload phase's
    # deadline ([limits] workload_timeout_s, 300 s by default), which the worker's parent enforces
    timeout_s: float = Field(default=240.0, gt=0)

    @field_validator("command")
    @classmethod
    def _placeholders(cls, v: str) -> str:
        if "{solution}" not in v and "{solution_dir}" not in v:
            raise ValueError("the command must name the candidate: {solution} (its entry file) or {solution_dir}")
        unknown = set(re.findall(r"{([^}]*)}", v)) - {"solution", "solution_dir", "task", "python"}
        if unknown:
            raise ValueError(f"unknown placeholder(s) {sorted(unknown)}: use {{task}}, {{solution}}, "
                             "{solution_dir} or {python}")
        return v


class Contract(_Strict):
    tolerance: Tolerances = Field(default_factory=Tolerances)
    weights: dict[str, float] = Field(default_factory=dict)
    inputs: dict[str, InputDistribution] = Field(default_factory=dict)
    limits: Limits = Field(default_factory=Limits)
    timing: TimingPolicy = Field(default_factory=TimingPolicy)
    promotion: Promotion = Field(default_factory=Promotion)
    integrity: Integrity = Field(default_factory=Integrity)
    generalization: Generalization = Field(default_factory=Generalization)
    roofline: Roofline = Field(default_factory=Roofline)
    target_hardware: list[str] = Field(default_factory=list)
    check: list[Check] = Field(default_factory=list)
    input_generator: InputGenerator = Field(default_factory=InputGenerator)  # written as [inputs] generator / sets
    validate_: Validate | None = Field(default=None, alias="validate")

    model_config = ConfigDict(extra="forbid", populate_by_name=True)  # `validate` would shadow BaseModel.validate

    @model_validator(mode="before")
    @classmethod
    def _generator_keys(cls, data: object) -> object:
        """``[inputs]`` holds one distribution table per input name, and also (not being tables)
        ``generator``, ``axes`` and ``[[inputs.sets]]``: those go to :class:`InputGenerator`."""
        if isinstance(data, dict) and isinstance(data.get("inputs"), dict):
            ins = dict(data["inputs"])
            moved = {k: ins.pop(k) for k in ("generator", "axes", "sets") if k in ins and not isinstance(ins[k], dict)}
            if moved:
                data = {**data, "inputs": ins, "input_generator": moved}
        return data

    def weight(self, uuid: str) -> float:
        return self.weights.get(uuid, 1.0)


def load_contract(path: Path) -> Contract:
    """Read ``contract.toml``; a missing file gives the documented defaults."""
    if not path.exists():
        return Contract()
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise InputError(Problem(path, "", f"not valid TOML: {e}", "fix the syntax")) from None
    try:
        return Contract.model_validate(data)
    except ValidationError as e:
        # the user wrote these keys in [inputs]
        problems = [dataclasses.replace(p, field="inputs" + p.field.removeprefix("input_generator"))
                    if p.field.startswith("input_generator") else p for p in pydantic_problems(path, e)]
        raise InputError(problems) from None


def pydantic_problems(path: Path | str, error: ValidationError, prefix: str = "") -> list[Problem]:
    """One Problem per pydantic error, naming the field by its dotted location."""
    problems = []
    for err in error.errors():
        loc = ".".join(str(p) for p in err["loc"] if not str(p).startswith("function-"))
        field = f"{prefix}{loc}" if loc else prefix.rstrip(".")
        msg = err["msg"].removeprefix("Value error, ")
        fix = ""
        if err["type"] == "extra_forbidden":
            msg = "unknown field"
            fix = "remove it or check its spelling against the documented fields"
        elif err["type"] == "missing":
            fix = "add it"
        elif err["type"] == "literal_error":
            fix = "use one of the allowed values"
        problems.append(Problem(path, field, msg, fix))
    return problems
