"""FlashInfer-Trace *Workload*: the values of the var axes and how to make each input.

``workloads.jsonl`` lines are trace-shaped, as FlashInfer-Bench and KDA write them:
``{"definition": NAME, "workload": {...}, "solution": null, "evaluation": null}``. A bare workload
object per line is accepted too.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class RandomInput(BaseModel):
    """Drawn fresh every run from the distribution the contract gives (default: see task.inputs)."""

    type: Literal["random"]


class ScalarInput(BaseModel):
    type: Literal["scalar"]
    value: int | float | bool


class SafetensorsInput(BaseModel):
    type: Literal["safetensors"]
    path: str  # relative to the task folder, or absolute
    tensor_key: str


InputSpec = Annotated[RandomInput | ScalarInput | SafetensorsInput, Field(discriminator="type")]


class Workload(BaseModel):
    model_config = ConfigDict(extra="allow")

    uuid: str = Field(min_length=1)
    axes: dict[str, int] = Field(default_factory=dict)
    inputs: dict[str, InputSpec] = Field(default_factory=dict)  # absent inputs are random


class WorkloadTrace(BaseModel):
    """One line of workloads.jsonl: a Trace with only `definition` and `workload` set."""

    model_config = ConfigDict(extra="allow")

    definition: str
    workload: Workload
    solution: Any = None
    evaluation: Any = None
