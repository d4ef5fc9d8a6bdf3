"""FacetIndex: shared value combinations, the same candidate sets as a plain oracle."""

from __future__ import annotations

import pickle
import random

from retrieval.structures import FACET_FIELDS, FacetIndex

VALUES = {
    "kind": ["decision", "memory"],
    "category": ["architecture", "security", "process"],
    "stakes": ["low", "high"],
    "project": ["ledger", "web", "mobile"],
}


def _random_values(rng: random.Random) -> dict[str, str]:
    out = {"kind": rng.choice(VALUES["kind"])}
    for field in FACET_FIELDS[1:]:
        if rng.random() < 0.8:
            out[field] = rng.choice(VALUES[field])
    return out


def _oracle_candidates(held: dict[str, dict[str, str]], wanted: dict[str, list[str]]) -> set[str]:
    return {
        node_id
        for node_id, values in held.items()
        if all(values.get(field) in allowed for field, allowed in wanted.items())
    }


def test_random_puts_and_removes_match_a_plain_oracle() -> None:
    rng = random.Random(5)
    index, held = FacetIndex(), {}
    for step in range(3000):
        node_id = f"n{rng.randrange(400)}"
        if rng.random() < 0.25:
            index.remove(node_id)
            held.pop(node_id, None)
        else:
            values = _random_values(rng)
            index.put(node_id, values)
            held[node_id] = values
        if step % 100 == 0:
            wanted = {"category": ["security", "process"], "project": ["web"]}
            assert index.candidates(wanted) == _oracle_candidates(held, wanted)
    assert index.ids() == set(held)
    assert all(index.values_of(n) == v for n, v in held.items())
    assert index.candidates({}) is None
    assert index.candidates({"project": ["nowhere"]}) == set()


def test_nodes_with_the_same_values_share_one_combination() -> None:
    index = FacetIndex()
    for n in range(100):
        index.put(f"n{n}", {"kind": "decision", "category": "security", "project": "web"})
    index.put("odd", {"kind": "memory"})
    assert len({id(index._values[f"n{n}"]) for n in range(100)}) == 1
    assert len(index._combos) == 2
    assert index.values_of("odd") == {"kind": "memory"}
    assert index.values_of("missing") == {}


def test_a_snapshot_with_per_node_dicts_loads_into_shared_combinations() -> None:
    index = FacetIndex()
    index.put("a", {"kind": "decision", "stakes": "high"})
    index.put("b", {"kind": "decision", "stakes": "high"})
    # The layout snapshots had before: per-node dicts and no combination table.
    old = FacetIndex.__new__(FacetIndex)
    old.__dict__.update(_sets=index._sets, _values={n: dict(index._values[n]) for n in ("a", "b")})
    loaded = pickle.loads(pickle.dumps(old))
    assert loaded.values_of("a") == {"kind": "decision", "stakes": "high"}
    assert loaded._values["a"] is loaded._values["b"]
    assert loaded.candidates({"stakes": ["high"]}) == {"a", "b"}
    loaded.remove("a")
    assert loaded.candidates({"stakes": ["high"]}) == {"b"}
    again = pickle.loads(pickle.dumps(loaded))
    assert again._values["b"] is next(iter(again._combos))
