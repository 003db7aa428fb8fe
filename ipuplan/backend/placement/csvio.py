"""MiniMalloc's public CSV format: `id,lower,upper,size` (lifespan [lower, upper)), an optional `alignment`
column; the output adds `offset`. Every malformed line is bad input naming the line and what is valid."""

from __future__ import annotations

import csv
from pathlib import Path

from ...errors import InputError
from .problem import Buffer, Instance

REQUIRED = ("id", "lower", "upper", "size")


def read_csv(path: str | Path, capacity: int) -> Instance:
    p = Path(path)
    try:
        text = p.read_text()
    except FileNotFoundError:
        raise InputError(str(p), None, "no such file", "pass a MiniMalloc CSV: id,lower,upper,size[,alignment]") from None
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(str(p), None, f"cannot read it ({e})", "pass a UTF-8 CSV file") from None
    rows = list(csv.reader(text.splitlines()))
    if not rows:
        raise InputError(str(p), None, "empty file", "the first line is the header id,lower,upper,size")
    head = [h.strip() for h in rows[0]]
    missing = [h for h in REQUIRED if h not in head]
    unknown = [h for h in head if h not in REQUIRED + ("alignment", "offset")]
    if missing or unknown:
        raise InputError(f"{p}:1", None, f"header {','.join(head)!r} " + (f"lacks {missing}" if missing else
                         f"has unknown columns {unknown}"), "valid: id,lower,upper,size[,alignment]")
    col = {h: k for k, h in enumerate(head)}
    buffers, seen = [], set()
    for n, row in enumerate(rows[1:], start=2):
        if not row or all(not c.strip() for c in row):
            continue
        if len(row) != len(head):
            raise InputError(f"{p}:{n}", None, f"{len(row)} fields, the header has {len(head)}", "one value per column")
        vals = {}
        for h, k in col.items():
            try:
                vals[h] = int(row[k])
            except ValueError:
                if h == "id":
                    vals[h] = row[k].strip()
                    continue
                raise InputError(f"{p}:{n}", h, f"{row[k]!r} is not an integer", "give whole numbers") from None
        if vals["id"] in seen:
            raise InputError(f"{p}:{n}", "id", f"{vals['id']!r} appears twice", "give every buffer its own id")
        seen.add(vals["id"])
        if vals["lower"] < 0 or vals["upper"] <= vals["lower"]:
            raise InputError(f"{p}:{n}", "upper", f"lifespan [{vals['lower']}, {vals['upper']}) is empty or negative",
                             "valid: 0 <= lower < upper")
        if vals["size"] < 0 or vals["size"] > capacity:
            raise InputError(f"{p}:{n}", "size", f"{vals['size']} is outside 0..{capacity:,}", "sizes fit the capacity")
        align = vals.get("alignment", 1)
        if align < 1:
            raise InputError(f"{p}:{n}", "alignment", f"{align} is not positive", "valid: 1 or more")
        buffers.append(Buffer(str(vals["id"]), vals["size"], vals["lower"], vals["upper"] - 1, align))
    return Instance(capacity, tuple(buffers))


def write_csv(path: str | Path, inst: Instance, offsets) -> None:
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["id", "lower", "upper", "size", "offset"])
        for b, o in zip(inst.buffers, offsets):
            w.writerow([b.name, b.first, b.last + 1, b.size, o])
