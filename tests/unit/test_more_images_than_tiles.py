"""More images than tiles: the row grid holds whole images on every tile and the positional add reads its table
whole beside each block; with at most one image per tile the catalogue offers what it offered before."""

from __future__ import annotations

import numpy as np

from conftest import MODELS, ROOT


def _impls(tmp_path, batch: int, tiles: int = 8):
    from ipuplan.catalogue import Catalogue
    from ipuplan.model import build_graph, load_model
    from ipuplan.solver.problem import build_problem
    from ipuplan.target import load_target
    t = tmp_path / f"t{tiles}.yaml"
    t.write_text((ROOT / "targets" / "small64.yaml").read_text().replace("tiles: 64 ", f"tiles: {tiles} ", 1))
    p = build_problem(build_graph(load_model(MODELS / "vit-small.yaml"), batch), load_target(t), batch, None, False,
                      None, 0, Catalogue.SHAPED)
    return p.impls


def test_the_positional_add_has_whole_image_blocks_beyond_the_tile_count(tmp_path):
    impls = _impls(tmp_path, 9)
    assert impls["embed.pos"] and all(impls.values())
    for im in impls["embed.pos"]:
        assert not (im.out.row_bounds() % 4).any()  # 4 tokens per image: no block splits one
        (pu,) = im.params
        assert (pu.layout.rows, pu.layout.pr, pu.layout.replicas) == (4, 1, im.out.pr)
        # each block's table on the block's own tile
        assert np.array_equal(pu.layout.block_tiles(8)[:, 0, :], im.out.block_tiles(8)[0])
    # the row grid over every tile: 8 blocks, one of them two images
    assert any(im.out.pr == 8 and sorted(im.out.row_sizes()) == [4] * 7 + [8] for im in impls["embed.pos"])


def test_at_most_one_image_per_tile_nothing_changes(tmp_path):
    # b8 on 8 tiles: as before, only layouts with a row group per image (the table split over each image's blocks)
    impls = _impls(tmp_path, 8)["embed.pos"]
    assert impls and all(im.out.row_groups == 8 for im in impls)
