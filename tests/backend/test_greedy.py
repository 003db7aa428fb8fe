"""The cheap placements: best fit where first fit fails, replays of a neighbour's address order, and a property
test that whatever they place is valid and that a placement replayed on its own instance always places it."""

from __future__ import annotations

from hypothesis import given, settings

from ipuplan.backend.placement import Buffer, Instance, violations
from ipuplan.backend.placement.cpsat import place_cpsat
from ipuplan.backend.placement.greedy import Neighbours, best_fit, first_fit, replay
from tests.backend.test_placement import instances

# 9 bytes: first fit fails in each of its orders, best fit places it
_HOLES = Instance(9, (Buffer("a", 4, 0, 0), Buffer("b", 2, 1, 3), Buffer("c", 2, 2, 5), Buffer("d", 5, 4, 4),
                      Buffer("e", 2, 3, 5), Buffer("f", 2, 0, 3)))


def test_best_fit_keeps_the_holes_first_fit_strands():
    assert first_fit(_HOLES) is None
    r = best_fit(_HOLES)
    assert r.placed and r.method.startswith("best fit") and violations(_HOLES, r.offsets) == []


def test_a_replay_follows_the_neighbours_address_order():
    like = Instance(8, (Buffer("a", 4, 1, 2), Buffer("b", 3, 3, 3), Buffer("c", 2, 3, 3), Buffer("d", 3, 2, 3)))
    placed = place_cpsat(like, 1.0)
    assert placed.placed and first_fit(like) is None and best_fit(like) is None
    mine = Instance(9, (Buffer("a", 4, 1, 2), Buffer("b", 2, 3, 3), Buffer("c", 3, 3, 3), Buffer("d", 4, 2, 3),
                        Buffer("new", 1, 0, 0)))
    r = replay(mine, like, placed.offsets, "tile 7")
    assert r.method == "replay of tile 7" and violations(mine, r.offsets) == []
    # the neighbour's order, with the buffer it lacks last: a and b at the bottom, then c, then d
    assert r.offsets[:4] == [0, 0, 2, 5]


def test_the_nearest_placed_neighbour_is_replayed_first(monkeypatch):
    import ipuplan.backend.placement.greedy as greedy

    def inst(extra):
        return Instance(16, (Buffer("a", 4, 0, 1), Buffer("b", 4 + extra, 1, 2)))
    insts = [inst(8), inst(1), inst(0)]
    final = [first_fit(insts[0]), first_fit(insts[1]), None]
    near = Neighbours(insts, ["far", "near", "me"])
    assert near.spread(final) == 1 and final[2].method == "replay of near"
    assert near.spread(final) == 0  # nothing left to place
    monkeypatch.setattr(greedy, "MAX_TRIES", 0)  # a group that has had its tries gets no more
    final = [first_fit(insts[0]), first_fit(insts[1]), None]
    assert Neighbours(insts, ["far", "near", "me"]).spread(final) == 0 and final[2] is None


@settings(max_examples=300, deadline=None)
@given(instances())
def test_cheap_placements_are_valid_and_a_placement_replays_on_its_own_instance(inst):
    for r in (first_fit(inst), best_fit(inst)):
        if r is not None:
            assert violations(inst, r.offsets) == []
    exact = place_cpsat(inst)
    if exact.placed:
        # gravity in a placement's own address order never needs more room than the placement had
        r = replay(inst, inst, exact.offsets, "itself")
        assert r is not None and violations(inst, r.offsets) == []
        assert all(o <= e for o, e in zip(r.offsets, exact.offsets))
