"""Verify an INFEASIBLE certificate from model + target alone: say which instance it is about, range-check its
options, regenerate the catalogue it claims to cover, rebuild every candidate's bytes with the checker's rules,
recompute each row the certificate names, then re-prove it (counting bound, Farkas weights checked with exact
fractions, z3, or a split whose every case has Farkas weights). A machine certificate is re-derived from the IR
and the target only. Nothing numeric in the certificate is trusted; neither ortools nor the solver is imported."""

from __future__ import annotations

from .machine import machine_statement
from .pipeline import check_pipeline_certificate
from .pipeline_stages import check_pipeline_stages
from .plan import CheckReport, Limits
from .rows import load_certificate, prove_rows
from .validate import Invalid, get, one_of

KINDS = ("counting", "farkas", "z3", "split", "machine", "pipeline-machine", "pipeline-stages")


def instance_lines(cert: dict) -> list[str]:
    """What the certificate is about, as the user reads it before the verdict on it."""
    o = cert.get("options", {}) if isinstance(cert.get("options"), dict) else {}
    inp = cert.get("inputs", {}) if isinstance(cert.get("inputs"), dict) else {}
    path = lambda k: (inp.get(k) or {}).get("path") if isinstance(inp.get(k), dict) else None
    return [f"instance: model {cert.get('model')} ({path('model')}), batch {cert.get('batch')}, "
            f"{cert.get('layers')} layers, precision {cert.get('precision')}, fused QKV {cert.get('fuse_qkv')}",
            f"          target {path('target')}; options: support reserve {o.get('support_reserve')}, relays "
            f"{o.get('relays')}, exchange table budget {o.get('exchange_table_budget')}, headroom {o.get('headroom')}, "
            f"catalogue {o.get('catalogue', 'grid')}"]


def check_certificate(cert: dict, z3_rlimit: int = 200_000_000, base=None) -> CheckReport:
    """Re-prove `cert` for the instance it names (`base`: the directory holding it and its input copies)."""
    rep = CheckReport()
    rep.lines += instance_lines(cert if isinstance(cert, dict) else {})
    try:
        _check(cert, rep, z3_rlimit, base)
    except Invalid as e:
        rep.fail(str(e))
    return rep


def _check(cert: dict, rep: CheckReport, z3_rlimit: int, base=None) -> None:
    W = "certificate.json"
    loaded = load_certificate(cert, rep, base)
    if loaded is None:
        return
    g, target = loaded
    kind = one_of(cert, "kind", W, KINDS)
    options = get(cert, "options", W)
    if kind == "pipeline-machine":
        check_pipeline_certificate(cert, rep, base)
        return
    if kind == "pipeline-stages":
        check_pipeline_stages(cert, rep, base, z3_rlimit)
        return
    if kind == "machine":
        lim = Limits.derive(target, options, [], W)
        m = machine_statement(g, target, options.get("support_reserve"))
        if m != cert.get("machine"):
            rep.fail(f"machine statement differs from the recomputed one ({m})")
        elif not m["proves"]:
            rep.fail(f"machine: {m['needs_bytes']:,} B needed fit in {m['capacity_bytes']:,} B; no proof")
        else:
            rep.lines.append(f"machine: parameters {m['parameter_bytes']:,} B + live activations "
                             f"{m['live_activation_bytes']:,} B at {m['at']} = {m['needs_bytes']:,} B > "
                             f"{m['capacity_bytes']:,} B on all {target.tiles} tiles: no plan of any compiler fits")
        return
    prove_rows(cert, g, target, rep, z3_rlimit)
