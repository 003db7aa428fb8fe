"""Packages: `ipuplan build` and `ipuplan check` on each case, each a separate process, then corruptions of the
package (each rejected with a named error or it is a failure of this benchmark).

Usage: python bench/package.py [--cases vit-small@small64:2,siglip:2,pe:2] [--out bench/out/package]
       [--no-corrupt]
Prints a markdown table: build exit code and wall seconds (solve, placement, lowering, write, validation), the
package's size, steps, vertices and exchange runs, the check's word, wall seconds and peak memory; then one line
per corruption with the error it produced.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from ipuplan.package.archive import rewrite  # noqa: E402

MODELS = {"siglip": "models/siglip.yaml", "pe": "models/pe.yaml", "vit-small": "models/vit-small.yaml"}


def run(cmd: list[str]) -> tuple[int, float, str, int]:
    """(exit code, wall seconds, stdout + stderr, peak RSS KiB) of a command."""
    t = time.perf_counter()
    p = subprocess.run(["/usr/bin/time", "-f", "%M", *cmd], capture_output=True, text=True)
    err = p.stderr.strip().splitlines()
    peak = int(err[-1]) if err and err[-1].isdigit() else 0
    err = [line for line in (err[:-1] if peak else err) if not line.startswith("Command exited with")]
    return p.returncode, time.perf_counter() - t, p.stdout + "\n".join(err), peak


def corruptions(pkg: Path, work: Path) -> list[tuple[str, Path]]:
    work.mkdir(parents=True, exist_ok=True)
    data = pkg.read_bytes()
    flip = bytearray(data)
    flip[len(flip) // 2] ^= 0x55
    (work / "flipped.ipupkg").write_bytes(bytes(flip))
    (work / "truncated.ipupkg").write_bytes(data[: len(data) * 2 // 3])

    def moved(man, arrays):  # the output field of a GEMM vertex onto the next block's bytes
        s = next(s for s in man["steps"] if s["kind"] == "compute" and s["name"] == "gemm")
        a = arrays[f"{s['key']}/0/addr"].copy()
        a[0, 2] += arrays[f"{s['key']}/0/pitch"][0, 2] * arrays[f"{s['key']}/0/rows"][0, 2]
        arrays[f"{s['key']}/0/addr"] = a

    def shifted(man, arrays):  # one exchange destination a word later (inside its buffer)
        s = max((s for s in man["steps"] if s["kind"] == "exchange"), key=lambda s: s["runs"])
        d = arrays[f"{s['key']}/dst_addr"].copy()
        d[0, 0] += 4
        arrays[f"{s['key']}/dst_addr"] = d

    def unbound(man, arrays):  # the first parameter's binding gone
        man["bindings"].remove(next(b for b in man["bindings"] if b["role"] == "param"))

    out = [("flipped byte", work / "flipped.ipupkg"), ("truncated to 2/3", work / "truncated.ipupkg")]
    for name, edit in (("GEMM output moved one block on, checksums recomputed", moved),
                       ("exchange destination 4 B on, checksums recomputed", shifted),
                       ("a binding removed, checksums recomputed", unbound)):
        out.append((name, rewrite(pkg, work / f"{name.split(',')[0].replace(' ', '-')}.ipupkg", edit)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", default="vit-small@small64:2,siglip:2,pe:2")
    ap.add_argument("--out", default="bench/out/package")
    ap.add_argument("--no-corrupt", action="store_true")
    a = ap.parse_args()
    print(f"{datetime.date.today()} · {platform.machine()} · {os.cpu_count()} cores · python bench/package.py "
          f"--cases {a.cases}\n")
    print("| case | build (exit) | build s | of which solve+place / lower / write / validate s | package MiB | steps "
          "| vertices | exchange runs | check | check s | check peak GiB |")
    print("|---|---|---:|---|---:|---:|---:|---:|---|---:|---:|")
    built = []
    for case in a.cases.split(","):
        m, b = case.split(":")
        m, _, tgt = m.partition("@")
        d = Path(a.out) / f"{m}{'-' + tgt if tgt else ''}-b{b}"
        cmd = ["ipuplan", "build", MODELS[m], "--batch", b, "-o", str(d), "--json"]
        if tgt:
            cmd += ["--target", f"targets/{tgt}.yaml"]
        rc, secs, text, _ = run(cmd)
        if rc != 0:
            print(f"| {case} | exit {rc} | {secs:.1f} | | | | | | | | |")
            continue
        s = json.loads(text[text.index("{"):text.rindex("}") + 1])["package"]
        sec = s["seconds"]
        crc, csecs, ctext, peak = run(["ipuplan", "check", str(d / "model.ipupkg")])
        word = "PASSED" if crc == 0 else f"exit {crc}: {ctext.strip().splitlines()[-1][:120]}"
        print(f"| {case} | {rc} | {secs:.1f} | {sec['solve_and_place']:.1f} / {sec['lower']:.1f} / {sec['write']:.1f} / "
              f"{sec['read_and_validate']:.1f} | {s['bytes'] / 2**20:.2f} | {s['steps']} | {s['vertices']:,} | "
              f"{s['runs']:,} | {word} | {csecs:.1f} | {peak / 2**20:.1f} |")
        built.append((case, d / "model.ipupkg"))
    if a.no_corrupt or not built:
        return
    case, pkg = built[0]
    print(f"\nCorruptions of the {case} package (`ipuplan check` on each):\n")
    for name, path in corruptions(pkg, Path(a.out) / "corrupt"):
        rc, _, text, _ = run(["ipuplan", "check", str(path)])
        msg = re.sub(r"\s+", " ", text.strip().splitlines()[-1])[:200]
        print(f"- {name}: exit {rc} — `{msg}`")


if __name__ == "__main__":
    main()
