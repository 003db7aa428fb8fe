"""The report for SigLIP So400m b2: size and time to generate, time to first render in the system Chromium, and
the screenshot the README shows; then one screenshot of each other page kind for docs/REPORT.md (a build with a
run profile, an INFEASIBLE verdict, a sweep), all on vit-small and 64 tiles.

Usage: python bench/report.py [--dir bench/out/report-siglip-b2] [--screenshot docs/report-siglip-b2.png]
Solves `models/siglip.yaml --batch 2` into DIR unless DIR already holds a plan, then `ipuplan report DIR`, then
opens the page, hovers a heatmap cell and clicks the fullest tile, and saves a screenshot.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import shutil
import subprocess
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default="bench/out/report-siglip-b2")
    ap.add_argument("--screenshot", default="docs/report-siglip-b2.png")
    a = ap.parse_args()
    d = Path(a.dir)
    print(f"{datetime.date.today()} · {platform.machine()} · {os.cpu_count()} cores · python bench/report.py\n")
    if not (d / "plan.json").exists():
        subprocess.run(["ipuplan", "solve", "models/siglip.yaml", "--batch", "2", "-o", str(d)], check=True,
                       capture_output=True)
    t = time.perf_counter()
    subprocess.run(["ipuplan", "report", str(d), "-o", str(d / "report.html")], check=True, capture_output=True)
    gen = time.perf_counter() - t
    size = (d / "report.html").stat().st_size
    from playwright.sync_api import sync_playwright
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=shutil.which("chromium"), args=["--no-sandbox"])
        page = b.new_page(viewport={"width": 1040, "height": 1250})
        t = time.perf_counter()
        page.goto((d / "report.html").resolve().as_uri())
        page.wait_for_selector("body[data-rendered='1']")
        first = time.perf_counter() - t
        page.hover("#heat", position={"x": 420, "y": 210})
        page.screenshot(path=a.screenshot, clip={"x": 0, "y": 0, "width": 1040, "height": 1250})
        b.close()
    print(f"| report | bytes | generate s (process) | first render s (Chromium) |\n|---|---:|---:|---:|\n"
          f"| SigLIP So400m b2, 27 layers | {size:,} | {gen:.1f} | {first:.2f} |\n\nscreenshot: {a.screenshot}")
    kinds(Path("bench/out/report-kinds"))


def kinds(root: Path) -> None:
    """docs/report-{run,infeasible,sweep}.png: the other page kinds, on vit-small and 64 tiles."""
    import numpy as np
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    vs, small = "models/vit-small.yaml", "targets/small64.yaml"
    run = lambda *args: subprocess.run(["ipuplan", *map(str, args)], capture_output=True)  # noqa: E731
    run("build", vs, "--target", small, "--batch", "2", "-o", root / "run")
    np.save(root / "x.npy", np.random.default_rng(0).standard_normal((2, 3, 28, 28)).astype(np.float32))
    run("run", root / "run" / "model.ipupkg", "--pixels", root / "x.npy", "--profile", root / "run" / "profile.json")
    run("solve", vs, "--target", small, "--batch", "2", "--headroom", "600000", "-o", root / "infeasible")
    run("sweep", vs, "--target", small, "--batch", "1,2,4", "--layers", "1,2", "-o", root / "sweep")
    from playwright.sync_api import sync_playwright
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=shutil.which("chromium"), args=["--no-sandbox"])
        for kind in ("run", "infeasible", "sweep"):
            run("report", root / kind, "-o", root / kind / "report.html")
            page = b.new_page(viewport={"width": 1040, "height": 1250})
            page.goto((root / kind / "report.html").resolve().as_uri())
            page.wait_for_selector("body[data-rendered='1']")
            page.screenshot(path=f"docs/report-{kind}.png", clip={"x": 0, "y": 0, "width": 1040, "height": 1250})
            page.close()
            print(f"screenshot: docs/report-{kind}.png")
        b.close()


if __name__ == "__main__":
    main()
