"""Re-prove "no partition over N chips fits within the catalogue": each stage kind's certificate re-proved at the
count it was written for and at every larger count a stage of that kind can hold among N chips, then the counting
argument that no partition keeps every stage below its kind's refuted count."""

from __future__ import annotations

from ..formats import digest
from .plan import CheckReport, load_inputs
from .rows import PROOFS, check_rows_certificate, prove_rows
from .validate import Invalid, get, integer

KINDS = ("stem", "middle", "head")
SAME = ("model", "target", "batch", "layers", "precision", "fuse_qkv", "fp8_scales", "inputs", "options")


def kind_of(i: int, ipus: int) -> str:
    return "stem" if i == 0 else "head" if i == ipus - 1 else "middle"


def stage_record(kind: str, count: int, layers: int) -> dict:
    """A stage of `kind` holding `count` layers. A middle stage's graph does not depend on where it starts (its
    layers' weights are inputs of one shape), so one position stands for all."""
    first = 0 if kind == "stem" else layers - count if kind == "head" else 1
    return {"first": first, "count": count, "stem": kind == "stem", "head": kind == "head"}


def _is_stage(st, kind: str, layers: int, most: int) -> bool:
    """Whether `st` is a stage record of `kind` with at most `most` layers (a middle stage anywhere inside)."""
    if not isinstance(st, dict) or set(st) != {"first", "count", "stem", "head"} or \
            not all(isinstance(st[k], int) and not isinstance(st[k], bool) for k in ("first", "count")):
        return False
    c = st["count"]
    want = stage_record(kind, c, layers)
    if kind == "middle" and 0 < st["first"] < layers - c:
        want["first"] = st["first"]
    return 1 <= c <= most and st == want


def check_pipeline_stages(cert: dict, rep: CheckReport, base, z3_rlimit: int) -> None:
    W = "certificate.json"
    layers = integer(cert, "layers", W, 2, 1024)
    ipus = integer(cert, "ipus", W, 2, layers)
    subs = get(cert, "stages", W)
    if not isinstance(subs, dict) or not subs or not set(subs) <= set(KINDS):
        raise Invalid(f"{W}: stages is not a mapping of stage kinds ({', '.join(KINDS)}) to certificates")
    kinds = {kind_of(i, ipus) for i in range(ipus)}
    most = layers - (ipus - 1)  # every other stage holds at least one layer
    refuted: dict[str, int] = {}
    for kind, sub in subs.items():
        where = f"{W}: stages.{kind}"
        if kind not in kinds:
            raise Invalid(f"{where}: {ipus} chips have no {kind} stage")
        if not isinstance(sub, dict):
            raise Invalid(f"{where}: not a certificate")
        for k in SAME:
            if sub.get(k) != cert.get(k):
                raise Invalid(f"{where}: its {k} ({sub.get(k)!r}) is not the pipeline's ({cert.get(k)!r})")
        st = sub.get("stage")
        if not _is_stage(st, kind, layers, most):
            raise Invalid(f"{where}: stage {st!r} is not a {kind} stage of at most {most} layers")
        if sub.get("kind") not in PROOFS:
            raise Invalid(f"{where}: kind {sub.get('kind')!r}: a stage is refuted by rows ({', '.join(PROOFS)})")
        k = st["count"]
        one = check_rows_certificate(sub, z3_rlimit, base)  # as written: every recorded number re-derived
        rep.lines += [f"{kind} with {k} layers: {line}" for line in one.lines if not line.startswith(("instance", " "))]
        if not one.ok:
            for v in one.violations:
                rep.fail(f"{kind} with {k} layers: {v}")
            return
        for c in range(k + 1, most + 1):  # every larger count: the same rows, recomputed there
            lifted = dict(sub, stage=stage_record(kind, c, layers))
            lifted["digest"] = digest(lifted)
            sub_rep = CheckReport()
            loaded = load_inputs(lifted, sub_rep, f"{where} with {c} layers", base)
            if loaded is not None:
                prove_rows(lifted, loaded[0], loaded[1], sub_rep, z3_rlimit, lifted=True)
            if not sub_rep.ok:
                rep.fail(f"{kind} with {c} layers: the rows that refute {k} layers do not refute {c}: "
                         f"{sub_rep.violations[0]}")
                return
        rep.lines.append(f"{kind}: the same rows re-proved with every count from {k + 1} to {most} layers "
                         f"(the most a {kind} stage holds among {ipus} chips)" if k < most else
                         f"{kind}: {k} layers is the most a {kind} stage holds among {ipus} chips")
        refuted[kind] = k
    caps = [refuted.get(kind_of(i, ipus), most + 1) - 1 for i in range(ipus)]
    if min(caps) >= 1 and sum(min(c, most) for c in caps) >= layers:
        rep.fail(f"stages below the refuted counts ({', '.join(f'{k} < {c}' for k, c in refuted.items())}) can "
                 f"still hold {layers} layers over {ipus} chips: no proof")
        return
    rep.lines.append(f"partitions: a stage with fewer layers than its kind's refuted count holds at most "
                     f"{' + '.join(map(str, caps))} = {sum(caps)} < {layers} layers over {ipus} chips"
                     if min(caps) >= 1 else f"partitions: some stage of {ipus} chips has no count left below its "
                     f"kind's refuted one")
    rep.lines.append(f"no partition of {layers} layers into {ipus} stages has a plan on every stage within the "
                     f"catalogue (a statement about the catalogue, not every layout)")
