"""numpy execution of the IR, in `fp32` (ideal arithmetic) and `mixed` (device storage and accumulation) modes."""

from .run import Mode, Policy, run_graph

__all__ = ["Mode", "Policy", "run_graph"]
