"""SlotMap against a dict under random operations, merges included."""

from __future__ import annotations

import random

import numpy as np
import pytest

from graph import slotmap
from graph.slotmap import SlotMap


@pytest.mark.parametrize("merge_min", [4, 4096])
def test_random_operations_match_a_dict(monkeypatch: pytest.MonkeyPatch, merge_min: int) -> None:
    monkeypatch.setattr(slotmap, "_MERGE_MIN", merge_min)
    rng = random.Random(3)
    start = rng.sample(range(1 << 40), 300)
    oracle = {k: i for i, k in enumerate(start)}
    m = SlotMap.from_arrays(np.array(start, dtype=np.int64), np.arange(len(start)))
    universe = start + rng.sample(range(1 << 40), 300)
    for step in range(5000):
        key = rng.choice(universe)
        roll = rng.random()
        if roll < 0.4:
            slot = rng.randrange(1 << 30)
            m[key] = slot
            oracle[key] = slot
        elif roll < 0.7:
            assert m.pop(key) == oracle.pop(key, None)
        else:
            assert m.get(key) == oracle.get(key)
            assert (key in m) == (key in oracle)
        assert len(m) == len(oracle)
        if step % 500 == 0:
            assert sorted(m.items()) == sorted(oracle.items())
    assert sorted(m.items()) == sorted(oracle.items())


def test_delitem_of_a_missing_key_raises() -> None:
    m = SlotMap()
    m[5] = 1
    del m[5]
    with pytest.raises(KeyError):
        del m[5]
    assert len(m) == 0
    assert m.get(5) is None


def test_repeated_keys_are_refused() -> None:
    with pytest.raises(ValueError, match="distinct"):
        SlotMap.from_arrays(np.array([1, 1]), np.array([0, 1]))
    with pytest.raises(ValueError, match="same length"):
        SlotMap.from_arrays(np.array([1, 2]), np.array([0]))
