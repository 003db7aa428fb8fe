"""The checker's own machine statement: parameters plus the activations live at the fullest step of its own
schedule walk, against the target's capacity (computed here from the target file)."""

from __future__ import annotations

import numpy as np

from .space import walk


def machine_statement(g, target, support_reserve) -> dict:
    prog = walk(g)
    params = sum(v.nbytes * count for v, count in prog.params.values())
    live = np.zeros(prog.nsteps, np.int64)
    for o in prog.ops:
        live[o.c:prog.last[o.key] + 1] += o.graph.value(o.op.outputs[0]).nbytes
    step = int(np.argmax(live))
    need = int(params) + int(live[step])
    if support_reserve is not None:
        have = target.tiles * (target.seeds_planned_data_bytes - support_reserve)
    else:
        mm = target.memory_map
        have = target.tiles * (target.sram_bytes - target.unloadable_tail_bytes - mm.fixed_bytes - mm.code_window_bytes)
    return {"parameter_bytes": int(params), "live_activation_bytes": int(live[step]), "at": prog.steps[step],
            "needs_bytes": need, "capacity_bytes": have, "proves": need > have}
