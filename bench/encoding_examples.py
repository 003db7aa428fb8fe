"""The worked encoding examples of docs/EXCHANGE.md, computed by the planner's transfer code.

Usage: python bench/encoding_examples.py
"""

from __future__ import annotations

import numpy as np
from ipuplan.target import load_target
from ipuplan.layout import Layout, MemClass, transfers
from ipuplan.layout.transfer import stream_transfer, block_moves
from ipuplan.catalogue.transport import home_layout
from ipuplan.codelets.vector import copy_list_words
t = load_target("targets/c600.yaml")
e = t.encoding


def show(name, tr, patched=False):
    """Per tile: pieces and instruction words sent and received, local runs, the row's words and bytes."""
    w = tr.table_words(e, copy_list_words(t), patched)
    nz = np.flatnonzero(w)
    print(name)
    for tile in nz[:6]:
        print(f"  tile {tile}: sent pieces {tr.send_pieces[tile]}, send words {tr.send_words[tile]}, recv pieces {tr.recv_pieces[tile]}, recv words {tr.recv_words[tile]}, local runs {tr.local_runs[tile]} -> {w[tile]} words = {w[tile]*4} B")


show("1. one 400-byte run, tile 0 -> tile 1", transfers(Layout(1, 200, 2, start=0), Layout(1, 200, 2, start=1), 4))
show("2. one 40,000-byte run (10,000 words), tile 0 -> tile 1", transfers(Layout(1, 20000, 2, start=0), Layout(1, 20000, 2, start=1), 4))
show("3. the 400-byte run multicast to tiles 1, 2, 3", transfers(Layout(1, 200, 2, start=0), Layout(1, 200, 2, start=1, replicas=3, rep_stride=1), 4))
show("4. 8 rows x 64 F16 columns: source rows whole, destination padded to 80 columns (one run per row)",
     transfers(Layout(8, 64, 2, start=0), Layout(8, 64, 2, start=1, col_align=80), 4))
dst = Layout(64, 64, 1, pr=2, pc=2, start=0, mem=MemClass.INTERLEAVED)
home = home_layout(16, "w", dst)
show("5. a 64x64 FP8 weight staged from its block-major home over 16 tiles (per-layer sequence: patched)", stream_transfer(home, dst, 16, e), patched=True)
show("6. a local-only copy, 8 rows x 64 F16 columns, same tile, padded destination", transfers(Layout(8, 64, 2, start=0), Layout(8, 64, 2, start=0, col_align=80), 4))
