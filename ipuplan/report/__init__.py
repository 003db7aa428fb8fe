"""`ipuplan report`: one self-contained HTML page (inline script and style, no network) for a solve, build or
run directory."""

from __future__ import annotations

import json
from pathlib import Path

from .data import collect

_HERE = Path(__file__).parent


def render(directory: str | Path, scale: str = "auto") -> str:
    """The page; `scale` is the memory heat map's initial colour scale: "auto" (the fullest cell) or "fixed"
    (the tile's capacity)."""
    doc = collect(directory)
    doc["options"] = {"scale": scale}
    data = json.dumps(doc, separators=(",", ":")).replace("</", "<\\/")
    page = (_HERE / "page.html").read_text()
    return page.replace("__SCRIPT__", (_HERE / "page.js").read_text()).replace("__DATA__", data)


__all__ = ["collect", "render"]
