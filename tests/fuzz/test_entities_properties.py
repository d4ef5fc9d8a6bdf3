"""Property test for entity extraction: deterministic and well formed on any text.

The example-based tests (each kind, look-alikes, ordering, limits, IDF) are in
``tests/unit/test_entities.py``.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from retrieval.entities import extract_entities

SHAPES = """
    Caroline New York the I OK API getUserById max_retries os.path gpt-4 S3 @ann a@b.co
    https://x.io/a/ www.y.org src/a.py /etc/x/y ./run.sh 1/2 's \u2019s - . , ! ? ( ) José
""".split()  # noqa: SIM905


@settings(max_examples=300, deadline=None)
@given(
    text=st.one_of(st.text(max_size=120), st.lists(st.sampled_from(SHAPES)).map(" ".join)),
    explicit=st.lists(st.text(max_size=12), max_size=3),
)
def test_deterministic_and_well_formed(text: str, explicit: list[str]) -> None:
    first = extract_entities(text, explicit)
    assert first == extract_entities(text, explicit)
    assert len(first) <= 32
    keys = [entity.key for entity in first]
    assert len(keys) == len(set(keys))
    for key in keys:
        assert key
        assert key == key.casefold()
        assert len(key) >= 2
