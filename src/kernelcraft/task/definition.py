"""The FlashInfer-Trace *Definition*: what to compute, over which axes, with which inputs and outputs.

Field names and meanings follow FlashInfer-Trace exactly, so a ``definition.json`` written for
FlashInfer-Bench or a KDA wishlist request loads unchanged. Extra fields are kept, not rejected, so
files from newer FlashInfer-Trace versions still load.
"""

from __future__ import annotations

import ast
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from kernelcraft.task import expressions
from kernelcraft.task.dtypes import ALIASES, DType

DTypeName = Annotated[DType, BeforeValidator(lambda v: ALIASES.get(v, v))]


class AxisConst(BaseModel):
    type: Literal["const"]
    value: int = Field(ge=0)
    description: str | None = None


class AxisVar(BaseModel):
    type: Literal["var"]
    description: str | None = None


Axis = Annotated[AxisConst | AxisVar, Field(discriminator="type")]


class TensorSpec(BaseModel):
    # A list of axis names; null means a Python scalar (FlashInfer-Trace), [] a 0-d tensor.
    shape: list[str] | None
    dtype: DTypeName
    description: str | None = None


def parse_constraint(text: str):
    """Parse an axis expression such as ``"two_i == 2 * intermediate_size"`` (contract bounds, roofline
    formulas); raise ValueError if it uses anything but arithmetic and comparisons over names."""
    return expressions.parse(text)


def expression_names(text: str) -> set[str]:
    """The axis names an axis expression (a contract bound or a roofline formula) refers to."""
    return expressions.names(text)


def eval_expression(text: str, axes: dict[str, int]) -> int | float | bool:
    """Evaluate arithmetic/comparisons over axis values; ValueError if unsafe or naming unknown axes."""
    missing = expression_names(text) - set(axes)
    if missing:
        raise ValueError(f"expression {text!r} names unknown axes {sorted(missing)}")
    return expressions.evaluate(text, dict(axes))


def eval_constraint(text: str, axes: dict[str, int]) -> bool:
    return bool(eval_expression(text, axes))


class Definition(BaseModel):
    model_config = ConfigDict(extra="allow")

    name: str = Field(min_length=1)
    op_type: str = Field(min_length=1)
    axes: dict[str, Axis]
    inputs: dict[str, TensorSpec]  # order = the positional argument order of `run`
    outputs: dict[str, TensorSpec]  # order = the order of returned / destination outputs
    reference: str = Field(min_length=1)  # Python source defining `run(*inputs) -> outputs`
    tags: list[str] = Field(default_factory=list)
    description: str | None = None
    constraints: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _check(self) -> Definition:
        for kind, specs in (("inputs", self.inputs), ("outputs", self.outputs)):
            for name, spec in specs.items():
                for axis in spec.shape or []:
                    if axis not in self.axes:
                        raise ValueError(
                            f"{kind}.{name}.shape names axis {axis!r}, which is not in 'axes' "
                            f"(known: {sorted(self.axes)})"
                        )
        both = set(self.inputs) & set(self.outputs)
        if both:
            raise ValueError(f"names used for both an input and an output: {sorted(both)}")
        if not self.outputs:
            raise ValueError("'outputs' is empty: a definition must produce something")
        try:
            module = ast.parse(self.reference)
        except SyntaxError as e:
            raise ValueError(f"'reference' is not valid Python: line {e.lineno}: {e.msg}") from None
        if not any(isinstance(n, ast.FunctionDef) and n.name == "run" for n in module.body):
            raise ValueError("'reference' must define a top-level function `run`")
        from kernelcraft.task.constraints import names, parse_value_constraint

        known, inputs_only = set(self.axes) | set(self.inputs), set(self.inputs) - set(self.axes)
        for c in self.constraints:
            # A constraint naming an input states its shape or its values (FlashInfer-Trace writes
            # "num_kv_indices == kv_indptr[-1].item()"): values are checked on the inputs, not on axes.
            try:
                used = names(c)
            except SyntaxError as e:
                raise ValueError(f"constraint {c!r} is not a Python expression: {e.msg}") from None
            if used - known:
                raise ValueError(f"constraint {c!r} names {sorted(used - known)}, which are neither axes nor inputs")
            if used & inputs_only:
                parse_value_constraint(c)
            else:
                parse_constraint(c)
        return self

    @property
    def var_axes(self) -> list[str]:
        return [n for n, a in self.axes.items() if isinstance(a, AxisVar)]

    def axis_values(self, var_values: dict[str, int]) -> dict[str, int]:
        """All axis values: the consts from the definition, the vars from a workload."""
        values = {n: a.value for n, a in self.axes.items() if isinstance(a, AxisConst)}
        values.update(var_values)
        return values

    def shape(self, spec: TensorSpec, axes: dict[str, int]) -> tuple[int, ...] | None:
        return None if spec.shape is None else tuple(axes[a] for a in spec.shape)

    def violated_constraints(self, axes: dict[str, int]) -> list[str]:
        """The axis and shape constraints these axis values break (``x.shape[1] == h`` follows from the
        axes); constraints on input values are checked on the inputs
        (:func:`kernelcraft.task.constraints.violated_values`)."""
        from kernelcraft.task.constraints import axis_constraints, violated_shapes

        return [c for c in axis_constraints(self) if not eval_constraint(c, axes)] + violated_shapes(self, axes)

    def value_constraints(self) -> list[str]:
        """Constraints that read input values (``num_kv_indices == kv_indptr[-1].item()``): they can only
        be checked on inputs made for a workload (:func:`kernelcraft.task.inputs.make_inputs` does)."""
        from kernelcraft.task.constraints import value_constraints

        return value_constraints(self)

    def violated_value_constraints(self, axes: dict[str, int], inputs: list) -> list[str]:
        """The value constraints the inputs (in definition order) break."""
        from kernelcraft.task.constraints import violated_values

        return violated_values(self, axes, dict(zip(self.inputs, inputs, strict=True)))

    def to_json_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)
