"""Family `objective`: minimize modeled cycles.

cycles = constant (per-superstep launch and sync) + sum_i cycles_i * x_i over implementation literals
(compute, intra-op exchange, parameter staging) + sum_z cycles_z * z over pairs that convert layouts.
Repeat bodies count times their trip count.
"""

from __future__ import annotations

from .model import ModelCtx


def objective_expr(ctx: ModelCtx):
    p = ctx.p
    return sum(c * ctx.x[k] for k, c in p.cycles.items() if c and k in ctx.x) + p.constant_cycles


def add_objective(ctx: ModelCtx) -> None:
    ctx.m.Minimize(objective_expr(ctx))


def objective_value(p, chosen: set[tuple]) -> int:
    """Modeled cycles of a full set of chosen literals."""
    return p.constant_cycles + sum(c for k, c in p.cycles.items() if k in chosen)
