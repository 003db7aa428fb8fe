"""The reference interpreter: walks a Graph in schedule order, running Repeat bodies per iteration."""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import Enum
from typing import Callable, Mapping

import numpy as np

from ..errors import IRError
from ..ir.graph import DType, Graph, OpKind, Role, Value
from ..numerics import round_to
from ..target import Target
from .kernels import KERNELS


class Mode(Enum):
    FP32 = "fp32"  # ideal float32 arithmetic; casts only scale
    MIXED = "mixed"  # device storage types, FP8 saturation, accumulator rounding per the target


@dataclass(frozen=True)
class Policy:
    mode: Mode
    accumulation: Mapping[str, DType]  # operand precision ("f16"/"f8") -> accumulator
    chunk: int
    plan: Mapping[str, dict] | None = None  # plan-faithful: each op's recorded choice (plan.json `choices`)
    choice: dict | None = None  # the choice of the op being run (set per op in plan-faithful mode)
    observe: Callable | None = None  # called (scoped op name, op, inputs) before every op: calibration

    def at(self, key: str) -> "Policy":
        """This policy for op `key`: in plan-faithful mode, carrying that op's choice."""
        return self if self.plan is None else replace(self, choice=self.plan.get(key))

    @property
    def exact(self) -> bool:
        return self.mode is Mode.FP32

    @classmethod
    def for_target(cls, target: Target, mode: Mode) -> "Policy":
        acc = {k: DType.F16 if v == "f16" else DType.F32 for k, v in target.accumulation.items()}
        return cls(mode, acc, target.accumulation_chunk)

    def store(self, x: np.ndarray, dtype: DType, scale: int = 0) -> np.ndarray:
        """Round `x` to what a buffer of `dtype` holds (mixed) or keep float32 (fp32)."""
        if self.exact:
            return np.asarray(x, np.float32)
        return round_to(x, dtype, scale)


def stored_params(graph: Graph, logical: Mapping[str, np.ndarray], policy: Policy) -> dict[str, np.ndarray]:
    """Parameter/constant buffers as stored: logical float32 values scaled by 2^-scale and rounded."""
    out = {}
    for v in graph.values:
        if v.role in (Role.PARAM, Role.CONST):
            if v.name not in logical:
                raise IRError(f"no value for parameter `{v.name}`")
            x = np.asarray(logical[v.name], np.float32)
            if x.shape != v.shape:
                raise IRError(f"parameter `{v.name}` has shape {x.shape}, graph needs {v.shape}")
            if policy.exact:
                out[v.name] = np.ldexp(x, -v.scale).astype(np.float32) if v.scale else x
            else:
                out[v.name] = round_to(x, v.dtype, v.scale)
    return out


def run_graph(graph: Graph, inputs: Mapping[str, np.ndarray], params: Mapping[str, np.ndarray],
              policy: Policy, *, stored: bool = False) -> dict[str, np.ndarray]:
    """Execute `graph`; `params` are logical values (or already stored when `stored`). Returns outputs."""
    env: dict[str, np.ndarray] = dict(params if stored else stored_params(graph, params, policy))
    for n in graph.inputs:
        v = graph.value(n)
        if v.role is Role.INPUT:
            env[n] = policy.store(inputs[n], v.dtype, v.scale)
    _run(graph, env, policy)
    return {n: env[n] for n in graph.outputs}


def op_executions(graph: Graph) -> int:
    """How many op executions running `graph` takes (a Repeat body's ops once per iteration): a progress total."""
    n = 0
    for op in graph.ops:
        n += op.attrs.count * op_executions(op.attrs.body) if op.kind is OpKind.REPEAT else 1
    return n


def _run(graph: Graph, env: dict[str, np.ndarray], policy: Policy, scope: str = "") -> None:
    vm = graph.value_map
    for op in graph.ops:
        if op.kind is OpKind.REPEAT:
            _repeat(op, env, policy, vm, scope)
            continue
        vals = [vm[n] for n in op.inputs]
        out: Value = vm[op.outputs[0]]
        if policy.observe is not None:
            policy.observe(scope + op.name, op, [env[n] for n in op.inputs])
        y = KERNELS[op.kind](op, [env[n] for n in op.inputs], vals, out, policy.at(scope + op.name))
        if op.kind is OpKind.CAST:
            env[out.name] = np.asarray(y, np.float32)
        else:
            env[out.name] = policy.store(y, out.dtype)


def _repeat(op, env, policy, vm, scope: str) -> None:
    a = op.attrs
    nc, ns = len(a.carried), len(a.sequences)
    carried = [env[n] for n in op.inputs[:nc]]
    seqs = [env[n] for n in op.inputs[nc:nc + ns]]
    inv = {bi: env[n] for bi, n in zip(a.invariants, op.inputs[nc + ns:])}
    for i in range(a.count):
        benv = dict(inv)
        benv.update({bi: c for (bi, _), c in zip(a.carried, carried)})
        benv.update({bi: s[i] for bi, s in zip(a.sequences, seqs)})
        _run(a.body, benv, policy, f"{scope}{op.name}/")
        carried = [benv[bo] for _, bo in a.carried]
    for n, c in zip(op.outputs, carried):
        env[n] = c
