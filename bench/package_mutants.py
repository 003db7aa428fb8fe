"""Semantic mutants of a package: each edit made through `ipuplan.package.archive.rewrite` (every digest
recomputed, only the meaning wrong), then `ipuplan check PKG` and `ipuplan run --compare` on it.

A mutant is *rejected* when `check` fails it (a failed check, exit 1, or an invalid package, exit 2) and
*accepted* when `check` passes it. `run` is reported beside: stopped with an error, wrong output (not bit-exact
against the plan-faithful reference), or bit-exact.

Bases: vit-small b2 (or --model/--batch) and pe-tiny-48 (pe-tiny at 48 px, MLP 300, 2 layers, b3: class token,
RoPE, attention pool) on small64.

Usage: python bench/package_mutants.py [--model vit-small] [--target small64] [--batch 2] [--out bench/out/mutants]
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ipuplan.errors import IpuplanError  # noqa: E402
from ipuplan.package.archive import rewrite  # noqa: E402

BUFFER = ("name", "group", "addr", "size", "first", "last")


def _idx(man, arrays, suffix, group=None, start=0):
    names, nm = man["buffer_names"], arrays["buffers/name"]
    for i in range(start, len(nm)):
        if names[nm[i]].endswith(suffix) and (group is None or arrays["buffers/group"][i] == group):
            return i
    raise LookupError(f"no buffer ending {suffix!r}" + (f" in group {group}" if group is not None else ""))


def _drop(arrays, i):
    for c in BUFFER:
        arrays[f"buffers/{c}"] = np.delete(arrays[f"buffers/{c}"], i)


def _set(arrays, col, i, value):
    a = arrays[f"buffers/{col}"].copy()
    a[i] = value
    arrays[f"buffers/{col}"] = a


def _steps(man, pred):
    return [s for s in man["steps"] if pred(s)]


def _cs(man, codelet, name=None):
    for s in man["steps"]:
        if s["kind"] == "compute" and any(v["codelet"] == codelet for v in s["vertices"]) and \
                (name is None or s["name"] == name):
            j = next(j for j, v in enumerate(s["vertices"]) if v["codelet"] == codelet)
            return s, j
    raise LookupError(f"no compute set of {codelet}")


def _param(man, arrays, codelet, col, fn, name=None):
    s, j = _cs(man, codelet, name)
    k = f"{s['key']}/{j}/params"
    p = arrays[k].copy()
    p[:, col] = fn(p[:, col])
    arrays[k] = p


# ---- the mutants: (class, description, edit[, base]) -----------------------------------------------------

def alias_activation_onto_param(man, arrays):
    a = _idx(man, arrays, "encoder/ln1 (output)")
    b = _idx(man, arrays, ".ln1.g (resident x2)", arrays["buffers/group"][a])
    _set(arrays, "addr", a, arrays["buffers/addr"][b])
    _drop(arrays, b)


def into_reservation(which):
    def edit(man, arrays):
        a = _idx(man, arrays, "encoder/ln1 (output)")
        r = _idx(man, arrays, which, arrays["buffers/group"][a])
        _set(arrays, "addr", a, arrays["buffers/addr"][r])
        _drop(arrays, r)
    return edit


def target_end_and_past_sram(man, arrays):
    man["target"]["loadable_end"] += 65536
    a = _idx(man, arrays, "encoder/ln1 (output)")
    _set(arrays, "addr", a, man["target"]["loadable_end"] - 65536)


def codelet_not_interleaved(man, arrays):
    for c in man["codelets"]:
        if c["name"].startswith("AmpGemm"):
            c["interleaved"] = []
    a = _idx(man, arrays, "encoder/ln1 -> encoder/qkv[0] (exchanged copy)")
    _set(arrays, "addr", a, man["target"]["region0_end"] - int(arrays["buffers/size"][a]) - 4096)


def partials_onto_x(man, arrays):
    p = _idx(man, arrays, "encoder/qkv (partials)")
    x = _idx(man, arrays, "encoder/ln1 -> encoder/qkv[0] (exchanged copy)", arrays["buffers/group"][p])
    _set(arrays, "addr", p, arrays["buffers/addr"][x] + 16)


def tables_zeroed(man, arrays):
    arrays["tables/lowered"] = np.zeros_like(arrays["tables/lowered"])


def exchange_repeated(man, arrays):
    ex = max(_steps(man, lambda s: s["kind"] == "exchange"), key=lambda s: s["runs"])
    i = man["steps"].index(ex)
    man["steps"][i + 1:i + 1] = [dict(ex) for _ in range(400)]


def vertices_repeated(man, arrays):
    s, j = _cs(man, "AmpGemmF16")
    for c in ("tile", "addr", "rows", "row_bytes", "pitch", "stride", "params"):
        k = f"{s['key']}/{j}/{c}"
        arrays[k] = np.concatenate([arrays[k]] * 200)
    s["vertices"][j]["count"] *= 200


def stride_middle_into(which):
    def edit(man, arrays):
        lo = next(r for r in man["target"]["reservations"] if r[0] == which)[1] if which != "code window" \
            else man["target"]["code_window"][0]
        s = next(s for s in man["steps"] if s["kind"] == "compute" and s["section"] == "body"
                 and s["vertices"][0]["codelet"] == "LayerNormF16")
        k = f"{s['key']}/0/"
        f = 4  # scratch
        addr, stride = arrays[k + "addr"], arrays[k + "stride"].copy()
        # iteration 1 lands on the reservation; iteration 0 stays where it was
        stride[0, f] = lo - addr[0, f]
        arrays[k + "stride"] = stride
    return edit


def gelu_flag(man, arrays):
    _param(man, arrays, "GeluF16", 0, lambda c: 1 - c)


def reduction_scale(man, arrays):
    _param(man, arrays, "ReducePartialsF32", 1, lambda c: c + 1)


def layernorm_eps(man, arrays):
    _param(man, arrays, "LayerNormF16", 0, lambda c: c + 1000)


def attention_scale(man, arrays):
    _param(man, arrays, "AttentionStreamingF16", 0, lambda c: c + (1 << 22))


def gemm_dtype(man, arrays):
    _param(man, arrays, "AmpGemmF16", 2, lambda c: np.full_like(c, 2))


def gemm_scale(man, arrays):
    _param(man, arrays, "AmpGemmF16", 0, lambda c: c - 3)


def gemm_partials_flag(man, arrays):
    _param(man, arrays, "AmpGemmF16", 1, lambda c: 1 - c)


def reduce_last_flag(man, arrays):
    _param(man, arrays, "ReducePartialsF32", 0, lambda c: 1 - c)


def attention_mode_flag(man, arrays):
    _param(man, arrays, "AttentionStreamingF16", 1, lambda c: 1 - c)


def binding_scale(man, arrays):
    man["bindings"][0]["scale"] = 3


def binding_dtype(man, arrays):
    man["bindings"][0]["dtype"] = "f32"


def repeat_count(man, arrays):
    man["count"] -= 1


def batch(man, arrays):
    man["batch"] += 1


def output_stride_hole(man, arrays):
    s = next(s for s in man["steps"] if s["kind"] == "compute" and s["section"] == "body"
             and s["vertices"][0]["codelet"] == "AddF16")
    k = f"{s['key']}/0/"
    st = arrays[k + "stride"].copy()
    st[:, 2] += 1 << 20
    arrays[k + "stride"] = st


def lifetime_shortened(man, arrays):
    a = _idx(man, arrays, "encoder/qkv (output)")
    _set(arrays, "last", a, arrays["buffers/first"][a])


def section_swapped(man, arrays):
    s = next(s for s in man["steps"] if s["section"] == "body")
    s["section"] = "epilogue"


def codelet_code_bytes(man, arrays):
    man["codelets"][0]["code_bytes"] = 16


def run_destination(man, arrays):
    ex = next(s for s in man["steps"] if s["kind"] == "exchange" and s["runs"] > 1)
    d = arrays[f"{ex['key']}/dst"].copy()
    d[0, 0] = (d[0, 0] + 1) % man["tiles"]
    arrays[f"{ex['key']}/dst"] = d


def output_order(man, arrays):
    b = next(b for b in man["bindings"] if b["role"] == "output")
    for c in ("tile", "addr"):
        k = f"{b['key']}/{c}"
        a = arrays[k].copy()
        a[[0, 1]] = a[[1, 0]]
        arrays[k] = a


def model_source_eps(man, arrays):
    raw = arrays["sources/model"].tobytes().decode()
    lines = [ln for ln in raw.splitlines() if not ln.startswith("norm_eps")]
    new = "\n".join(lines + ["norm_eps: 1.0e-3"]).encode()
    import hashlib
    arrays["sources/model"] = np.frombuffer(new, np.uint8)
    man["sources"]["model"]["sha256"] = hashlib.sha256(new).hexdigest()
    man["sources"]["model"]["bytes"] = len(new)


def placement_and_buffer(man, arrays):
    """Move a buffer in the package and in the placement it carries, consistently: the placement re-check must
    find the overlap."""
    import hashlib
    pl = json.loads(arrays["sources/placement"].tobytes())
    for g in pl["groups"]:
        names, bs = [b[0] for b in g["buffers"]], g["buffers"]
        hits = [(a, b) for a, n in enumerate(names) if n.endswith("(output)") and bs[a][3] > 0
                for b in range(len(bs)) if b != a and bs[b][2] > 0 and bs[b][1] != bs[a][1]
                and bs[b][3] <= bs[a][4] and bs[a][3] <= bs[b][4]]
        if hits:
            a, b = hits[0]
            break
    old = g["buffers"][a][1]
    g["buffers"][a][1] = g["buffers"][b][1]
    raw = json.dumps(pl).encode()
    arrays["sources/placement"] = np.frombuffer(raw, np.uint8)
    man["sources"]["placement"]["sha256"] = man["placement"]["sha256"] = hashlib.sha256(raw).hexdigest()
    tile = g["tiles"][0][0]
    grp = arrays["buffers/group_of_tile"][tile]
    nm = man["buffer_names"]
    i = next(i for i in range(len(arrays["buffers/name"])) if arrays["buffers/group"][i] == grp
             and nm[arrays["buffers/name"][i]] == names[a] and arrays["buffers/addr"][i] == old + pl["base"])
    _set(arrays, "addr", i, g["buffers"][b][1] + pl["base"])


def tables_raised(man, arrays):
    t = arrays["tables/lowered"].copy()
    t[int(np.argmax(t))] += 4096
    arrays["tables/lowered"] = t


def _vertex_cols(arrays, key):
    return {c: arrays[f"{key}/{c}"] for c in ("tile", "addr", "rows", "row_bytes", "pitch", "stride", "params")}


def copy_split_per_word(man, arrays):
    """The largest local copy's Copy vertex replaced by one vertex per word: the same bytes move, but the tile
    now holds more Copy descriptors than its tables count."""
    s = max((s for s in man["steps"] if s["kind"] == "compute" and s["name"] == "local copies"),
            key=lambda s: int(arrays[f"{s['key']}/0/row_bytes"][:, 1].max()))
    key = f"{s['key']}/0"
    c = _vertex_cols(arrays, key)
    k = int(np.argmax(c["row_bytes"][:, 1]))
    n = int(c["row_bytes"][k, 1]) // 4
    piece = {name: np.repeat(col[k:k + 1], n, axis=0) for name, col in c.items()}
    off = 4 * np.arange(n)
    piece["addr"] = piece["addr"] + off[:, None]
    piece["row_bytes"] = np.full_like(piece["row_bytes"], 4)
    piece["pitch"] = np.full_like(piece["pitch"], 4)
    piece["params"][:, 0] = 4
    for name, col in c.items():
        arrays[f"{key}/{name}"] = np.concatenate([np.delete(col, k, axis=0), piece[name]])
    s["vertices"][0]["count"] += n - 1


def empty_exchanges(man, arrays):
    """Five exchanges without runs added to a GEMM op: five more supervisor calls and syncs than a matmul has."""
    i, ex = next((i, s) for i, s in enumerate(man["steps"]) if s["kind"] == "exchange" and s["name"] == "operands"
                 and s["op"] == "encoder/qkv")
    for j in range(5):
        key = f"steps/9{j:04d}"
        for c in ("src", "src_addr", "nbytes", "src_stride"):
            arrays[f"{key}/{c}"] = arrays[f"{ex['key']}/{c}"][:0]
        for c in ("dst", "dst_addr"):
            arrays[f"{key}/{c}"] = arrays[f"{ex['key']}/{c}"][:0]
        man["steps"].insert(i + 1, dict(ex, key=key, name=f"operands {j + 2}", runs=0))


def ghost_op(man, arrays):
    s = next(s for s in man["steps"] if s["kind"] == "compute" and s["name"] == "gelu")
    s["op"] = "encoder/ghost"


def copy_row_bytes_param(man, arrays):
    _param(man, arrays, "Copy", 0, lambda c: c // 2, name="local copies")


def unused_param_word(man, arrays):
    _param(man, arrays, "GeluF16", 1, lambda c: c + 7)


def rope_param(col, fn):
    def edit(man, arrays):
        _param(man, arrays, "RopeF16", col, fn)
    return edit


MUTANTS = [
    ("alias", "an activation aliased onto a live parameter (LayerNorm output onto layer 0's gamma, its row deleted)",
     alias_activation_onto_param),
    ("reservation", "a buffer moved into the runtime-state reservation, the reservation's row deleted",
     into_reservation("runtime state")),
    ("reservation", "a buffer moved into the code window, the window's row deleted", into_reservation("code window")),
    ("target record", "loadable_end + 64 KiB and a buffer past the end of SRAM", target_end_and_past_sram),
    ("codelet catalogue", "GEMM declared without interleaved operands, its x in region 0", codelet_not_interleaved),
    ("buffer table", "a GEMM's partials moved into its x operand's element", partials_onto_x),
    ("tables", "tables/lowered zeroed", tables_zeroed),
    ("tables", "the largest exchange repeated 400 times", exchange_repeated),
    ("descriptors", "one GEMM compute set's vertices repeated 200 times", vertices_repeated),
    ("stride", "a LayerNorm scratch stride whose second iteration lands in the runtime state",
     stride_middle_into("runtime state")),
    ("stride", "a LayerNorm scratch stride whose second iteration lands in the host-exchange aperture",
     stride_middle_into("host-exchange aperture")),
    ("stride", "a body output given a stride hole", output_stride_hole),
    ("vertex parameter", "the GELU approximation flag flipped", gelu_flag),
    ("vertex parameter", "the reduction scale", reduction_scale),
    ("vertex parameter", "LayerNorm epsilon", layernorm_eps),
    ("vertex parameter", "the attention scale", attention_scale),
    ("vertex parameter", "a GEMM's operand dtype code (F16 read as F143)", gemm_dtype),
    ("vertex parameter", "a GEMM's output scale", gemm_scale),
    ("vertex parameter", "a GEMM's partial-sums flag flipped", gemm_partials_flag),
    ("vertex parameter", "a reduction round's last-round flag flipped", reduce_last_flag),
    ("vertex parameter", "attention's streaming flag flipped", attention_mode_flag),
    ("binding", "a binding's scale", binding_scale),
    ("binding", "a binding's dtype", binding_dtype),
    ("binding", "the output binding's element order (two slabs swapped)", output_order),
    ("identity", "the Repeat count reduced by one", repeat_count),
    ("identity", "the manifest's batch + 1", batch),
    ("buffer table", "a buffer's lifetime shortened below its last reader", lifetime_shortened),
    ("step list", "a body step declared in the epilogue", section_swapped),
    ("codelet catalogue", "a codelet's code bytes", codelet_code_bytes),
    ("exchange", "a run's destination moved to the next tile", run_destination),
    ("sources", "the carried model's LayerNorm epsilon edited (digest recomputed)", model_source_eps),
    ("sources", "a buffer moved in both the package and the placement it carries", placement_and_buffer),
    ("tables", "tables/lowered raised by 4 KiB on its largest tile (more exchange code than the plan accounted)",
     tables_raised),
    ("descriptors", "a local copy split into one Copy vertex per word (same bytes, more descriptors than counted)",
     copy_split_per_word),
    ("program", "five exchanges without runs added to a GEMM op", empty_exchanges),
    ("program", "a compute set moved to an op the plan does not have", ghost_op),
    ("vertex parameter", "a local copy's bytes-per-row parameter halved", copy_row_bytes_param),
    ("vertex parameter", "an unused parameter word (GELU's second) set", unused_param_word),
    ("vertex parameter", "RoPE's first row + 1", rope_param(0, lambda c: c + 1), "pe-tiny-48"),
    ("vertex parameter", "RoPE's first column + 2", rope_param(3, lambda c: c + 2), "pe-tiny-48"),
    ("vertex parameter", "RoPE's tokens per image + 1", rope_param(1, lambda c: c + 1), "pe-tiny-48"),
    ("vertex parameter", "RoPE's unrotated prefix set to 0", rope_param(2, lambda c: 0 * c), "pe-tiny-48"),
    ("vertex parameter", "RoPE's q window shortened by one head pair", rope_param(5, lambda c: c - 2), "pe-tiny-48"),
]


def _check(pkg: Path) -> str:
    from ipuplan.checker.package import check_package
    try:
        ok, _, why = check_package(pkg)
    except IpuplanError as e:
        return f"rejected (invalid): {e}"
    return "ACCEPTED" if ok else f"rejected: {why}"


def _run(pkg: Path, pixels) -> str:
    from ipuplan.runner.job import run_package
    try:
        r = run_package(pkg, pixels, compare=True)
    except IpuplanError as e:
        return f"stopped: {str(e)[:160]}"
    except Exception as e:  # noqa: BLE001 - a traceback is a finding here
        return f"CRASHED: {type(e).__name__}: {str(e)[:120]}"
    pf = r.compare["plan_faithful"]
    return "bit-exact" if pf["bit_exact"] else f"wrong output ({pf['differing']} of {pf['elements']} differ)"


def pe_tiny_48(text: str) -> str:
    """pe-tiny (class token, RoPE, attention-pool head) at 48 pixels, MLP 300, 2 layers: small enough for 64 tiles."""
    import re
    for pat, rep in ((r"(?m)^mlp: \S+", "mlp: 300"), (r"(?m)^layers: \S+", "layers: 2"),
                     (r"(?m)^  size: \S+", "  size: 48"), (r"(?m)^  resize: \S+", "  resize: 48"),
                     (r"(?m)^  mlp: \S+", "  mlp: 300"), (r"(?m)^model: \S+", "model: pe-tiny-48")):
        text = re.sub(pat, rep, text)
    return text


def build_base(base: str, out: Path, model: str = "vit-small", target: str = "small64", batch: int = 2):
    """(package, pixels) of a mutation base: `vit-small` (or the --model given), or `pe-tiny-48` at batch 3."""
    from ipuplan.model import load_model
    d = out / f"built-{base}"
    if base == "pe-tiny-48":
        src = out / "pe-tiny-48.yaml"
        src.write_text(pe_tiny_48((ROOT / "models" / "pe-tiny.yaml").read_text()))
        batch = 3
    else:
        src = ROOT / "models" / f"{model}.yaml"
    subprocess.run([sys.executable, "-m", "ipuplan.cli", "build", str(src), "--target",
                    str(ROOT / "targets" / f"{target}.yaml"), "--batch", str(batch), "-o", str(d)],
                   check=True, stdout=subprocess.DEVNULL)
    spec = load_model(str(src))
    pixels = np.random.default_rng(0).standard_normal(
        (batch, spec.channels, spec.image_size, spec.image_size)).astype(np.float32)
    return d / "model.ipupkg", pixels


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="vit-small")
    ap.add_argument("--target", default="small64")
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--out", default=str(ROOT / "bench" / "out" / "mutants"))
    a = ap.parse_args()
    out = Path(a.out)
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    bases = {}
    print(f"# package mutants: {a.model} batch {a.batch} and pe-tiny-48 batch 3 on {a.target}, "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.machine()}")
    for base in ("vit-small", "pe-tiny-48"):
        bases[base] = build_base(base, out, a.model, a.target, a.batch)
        pkg, pixels = bases[base]
        print(f"baseline {base}: check {_check(pkg)}; run {_run(pkg, pixels)}")
    print("| # | class | mutation | check | run |")
    print("|---:|---|---|---|---|")
    by_class: dict[str, list[int]] = {}
    for i, (cls, what, edit, *base) in enumerate(MUTANTS, 1):
        built, pixels = bases[base[0] if base else "vit-small"]
        pkg = out / f"m{i:02d}" / "model.ipupkg"
        try:
            rewrite(built, pkg, edit)
        except (LookupError, StopIteration) as e:
            print(f"| {i} | {cls} | {what} | not applicable ({e}) | |")
            continue
        # messages name packages relative to the output directory, as the table is read elsewhere
        c = _check(pkg).replace(f"{out}/", "")
        r = _run(pkg, pixels).replace(f"{out}/", "")
        acc = c == "ACCEPTED"
        by_class.setdefault(cls, [0, 0])[acc] += 1
        print(f"| {i} | {cls} | {what} | {c[:150].replace('|', '/')} | {r[:100].replace('|', '/')} |", flush=True)
    print()
    print("| class | rejected | accepted |")
    print("|---|---:|---:|")
    for cls, (rej, acc) in by_class.items():
        print(f"| {cls} | {rej} | {acc} |")
    tot = [sum(v[k] for v in by_class.values()) for k in (0, 1)]
    print(f"| all | {tot[0]} | {tot[1]} |")


if __name__ == "__main__":
    main()
