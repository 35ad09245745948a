"""Evaluation records: one per (solution, workload, device), grouped per solution and per run.

Field names equal FlashInfer-Trace's where the two overlap (status values, max_abs/rel errors,
latency_ms, reference_latency_ms, environment.hardware / libs); the rest is kernelcraft's:
the gate that decided, the reason, the baseline's latency, speedups, and the provenance needed to
reproduce the number (seed, source hash, harness and timing versions, toolchain, date).
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Status = Literal[
    "PASSED", "COMPILE_ERROR", "RUNTIME_ERROR", "TIMEOUT", "INCORRECT_SHAPE", "INCORRECT_DTYPE",
    "INCORRECT_NUMERICAL", "REJECTED", "SKIPPED",
]
Gate = Literal["static", "build", "correctness", "generalization", "integrity", "timing", "reference", "sanitize",
               "validation"]


class _Record(BaseModel):
    # inf/nan errors (a NaN where a number belongs) serialize as strings, as in FlashInfer-Trace.
    model_config = ConfigDict(ser_json_inf_nan="strings")


class WorkloadResult(_Record):
    uuid: str
    axes: dict[str, int]
    status: Status
    reason: str = ""  # why this workload failed or was skipped; empty when PASSED
    max_abs_error: float | None = None  # worst |candidate - reference| over all outputs
    max_rel_error: float | None = None  # worst |candidate - reference| / |reference|
    latency_ms: float | None = None  # median of the candidate's timed calls
    baseline_latency_ms: float | None = None  # median of baseline.py, interleaved with the candidate
    reference_latency_ms: float | None = None  # median of the definition's reference, same inputs
    speedup_vs_baseline: float | None = None  # baseline_latency_ms / latency_ms
    speedup_vs_reference: float | None = None  # reference_latency_ms / latency_ms
    request_judge_ratio: float | None = None  # a request's own judge ([[check]] kind = "python"): worst error / tolerance
    timing: dict | None = None  # the candidate's full Timing (percentiles, reps, method)
    floor_ms: float | None = None  # the device's speed of light for this workload's bytes/FLOPs (calibrated)
    sol: float | None = None  # fraction of the speed of light reached: floor_ms / latency_ms
    # the fastest trusted row of this run at this workload (baseline, torch.compile, a peer: what a user
    # could run instead), its latency, and best_peer_latency_ms / latency_ms: the headline
    best_peer: str | None = None
    best_peer_latency_ms: float | None = None
    speedup_vs_best_peer: float | None = None
    # why speedup_vs_best_peer decides nothing here (bimodal timing samples: kernelcraft.measure.stability);
    # "" when it decides, None when not assessed (no best peer, or a record older than this field)
    unsettled: str | None = None
    # --peers-beside: each trusted row timed again in this candidate's rotation, on an arena of the judge's
    # (median ms by row name); where present, best_peer is the fastest of them (best_peer_beside true)
    beside_ms: dict[str, float] | None = None
    best_peer_beside: bool | None = None


class SolutionResult(_Record):
    name: str
    status: Status
    role: str = "candidate"  # candidate, baseline, torch.compile or peer (trusted rows: the last three)
    gate: Gate | None = None  # the gate that stopped the candidate; None when PASSED
    reason: str = ""
    speedup_vs_best_peer: float | None = None  # weighted geometric mean over workloads with a best peer
    best_peers: list[str] = Field(default_factory=list)  # the rows that were fastest at some workload
    unsettled_workloads: int = 0  # workloads whose comparison with the best peer decides nothing (bimodal timing)
    # ms: the median of the baseline timed beside this candidate minus its own row, over short workloads
    # (measure/stability.py::asymmetry_ms): how much the candidate's timing conditions differ from a peer's
    timing_asymmetry_ms: float | None = None
    beside_unavailable: dict[str, str] | None = None  # --peers-beside: rows that could not be timed beside, why
    peers_unavailable: list[str] = Field(default_factory=list)  # peer rows SKIPPED in this run, and why
    speedup_vs_baseline: float | None = None  # weighted geometric mean over timed workloads
    speedup_vs_reference: float | None = None
    promotable: bool = False  # PASSED and the contract's promotion rule holds (approval, if required, comes later)
    author: str = ""
    language: str = ""
    entry_point: str = ""
    destination_passing_style: bool | None = None
    source_hash: str = ""  # sha256 of spec + sources (see Solution.source_hash)
    path: str = ""  # where the solution was read from
    wall_s: float = 0.0  # wall time of this solution's whole evaluation
    worker: str = ""  # where it ran: "cuda:1", "cpu#0", "ray:NODE/cuda:0" (kernelcraft.worker.executor)
    attempts: int = 1  # more than 1: the node running it died and it was run again elsewhere
    retried: list[str] = Field(default_factory=list)  # why each earlier attempt was lost
    workloads: list[WorkloadResult] = Field(default_factory=list)
    holdouts: list[WorkloadResult] = Field(default_factory=list)  # generalization gate: unseen shapes
    phases_s: dict[str, float] = Field(default_factory=dict)  # worker wall seconds per phase (start = spawn + imports)
    # the worker's CPU seconds (its compilers included), per phase and in all, as it reported them:
    # a diagnostic of the harness's cost, from a process that ran candidate code (never a verdict)
    phases_cpu_s: dict[str, float] = Field(default_factory=dict)
    worker_cpu_s: float | None = None
    sanitize: dict | None = None  # eval --sanitize: compute-sanitizer per tool (errors, excerpt, shapes)
    # eval --lint (on by default on a GPU): a Triton candidate's kernels compiled for sm_90 without a run, and the
    # pipelined-loop races read in their TTGIR (workload, triton, target, kernels, races[, error])
    static_lint: dict | None = None
    sandbox: dict | None = None  # the candidate's runner: protections that held / were degraded on this host
    # GPU: Nsight Compute's kernel time per workload against the reported latency (gauntlet.confirm)
    confirmation: dict | None = None
    implementation: dict | None = None  # a trusted row's library and version (peers, torch.compile's mode)
    # where this row's timed calls ran: "runner" (a process of its own, on inputs the judge wrote to a shared
    # arena: every candidate, and a trusted row with --trusted-timing runner) or "judge" (a trusted row timed by
    # the judging process itself); None: not timed, or a record older than this field
    timing_process: str | None = None
    timing_process_reason: str = ""  # why a trusted row asked to be timed in a runner was timed in the judge
    validation: dict | None = None  # a request's own verifier ([validate]): status, command, exit code, output's tail
    # the judge's slow reference calls read back from its cache instead of run again (gauntlet/refcache.py):
    # hits, stored, rejected (an entry whose signature failed); None: the cache was not used
    reference_cache: dict[str, int] | None = None
    baseline_unavailable: str = ""  # why no baseline ran beside this candidate, and what its speedups are relative to


class EvalReport(_Record):
    task: str  # the definition's name
    task_dir: str
    device: str
    environment: dict
    seed: int  # replay with --seed to draw the same inputs
    timestamp: str  # ISO 8601, UTC
    harness_version: str
    timing_version: str
    # which version of the contract the verdicts were computed against: sha256 of every file that defines the
    # task (the folder but solutions/, candidates/ and READMEs) and of them all (kernelcraft.task.sources)
    task_sources: dict | None = None
    calibration: dict | None = None  # the device ceilings "sol" is computed from (kernelcraft calibrate)
    executor: dict | None = None  # how the solutions were spread: kind, workers (kernelcraft.worker.executor)
    # what the timings are worth, where that needs saying: on a CPU, interpreter figures that say
    # nothing about a GPU (kernelcraft.measure.cpu.NOTE); "" on a GPU
    timing_note: str = ""
    solutions: list[SolutionResult] = Field(default_factory=list)
    test_switches: list[str] = Field(default_factory=list)  # gates a test switched off for this run
    # rows named for this run with no result yet when the record was written: an interrupted run's
    # record says what it never finished; empty in a finished record
    unfinished: list[str] = Field(default_factory=list)


def weighted_geomean(values: list[float], weights: list[float]) -> float | None:
    pairs = [(v, w) for v, w in zip(values, weights, strict=True) if v is not None and v > 0 and w > 0]
    if not pairs:
        return None
    total = sum(w for _, w in pairs)
    return math.exp(sum(w * math.log(v) for v, w in pairs) / total)
