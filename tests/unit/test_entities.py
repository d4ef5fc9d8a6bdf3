"""Deterministic entity extraction: each kind, its look-alikes, ordering, limits and IDF."""

from __future__ import annotations

import math

import pytest

from retrieval.entities import Entity, EntityKind, entity_keys, extract_entities, idf_weights

URL, PATH, MENTION = EntityKind.URL, EntityKind.PATH, EntityKind.MENTION
IDENTIFIER, CAMEL = EntityKind.IDENTIFIER, EntityKind.CAMEL
ACRONYM, NAME = EntityKind.ACRONYM, EntityKind.NAME


def found(text: str) -> dict[str, EntityKind]:
    return {entity.key: entity.kind for entity in extract_entities(text)}


@pytest.mark.parametrize(
    ("text", "key", "kind"),
    [
        ("docs at https://docs.example.com/api/v2/ today", "docs.example.com/api/v2", URL),
        ("see HTTP://Example.com.", "example.com", URL),
        ("mirror www.example.org/pkg, thanks", "www.example.org/pkg", URL),
        ("(see https://en.wikipedia.org/wiki/Foo_(bar))", "en.wikipedia.org/wiki/foo_(bar)", URL),
        ("edit /etc/nginx/nginx.conf now", "/etc/nginx/nginx.conf", PATH),
        ("it lives in src/app/main.py.", "src/app/main.py", PATH),
        ("run ./scripts/run.sh", "./scripts/run.sh", PATH),
        ("binaries in /usr/local/bin/", "/usr/local/bin", PATH),
        ("my ~/.bashrc", "~/.bashrc", PATH),
        ("read docs/README.md", "docs/readme.md", PATH),
        ("ask @melanie.", "@melanie", MENTION),
        ("cc @bob_smith and", "@bob_smith", MENTION),
        ("set max_retries to 3", "max_retries", IDENTIFIER),
        ("call os.path.join here", "os.path.join", IDENTIFIER),
        ("the service.cli module", "service.cli", IDENTIFIER),
        ("fixed in PROJ-123", "proj-123", IDENTIFIER),
        ("we use gpt-4 for it", "gpt-4", IDENTIFIER),
        ("buckets on S3", "s3", IDENTIFIER),
        ("an ec2 box", "ec2", IDENTIFIER),
        ("the v2 API", "v2", IDENTIFIER),
        ("enable 2FA", "2fa", IDENTIFIER),
        ("mail alice@example.com today", "alice@example.com", IDENTIFIER),
        ("moved to PostgreSQL", "postgresql", CAMEL),
        ("vectors in ChromaDB", "chromadb", CAMEL),
        ("calls getUserById twice", "getuserbyid", CAMEL),
        ("served by FastAPI", "fastapi", CAMEL),
        ("an iPhone app", "iphone", CAMEL),
        ("the API is slow", "api", ACRONYM),
        ("hosted on AWS", "aws", ACRONYM),
        ("the LGBTQ support group", "lgbtq", ACRONYM),
        ("signed JWT tokens", "jwt", ACRONYM),
        ("two new APIs", "api", ACRONYM),
        ("talked to Caroline", "caroline", NAME),
        ("Caroline went home", "caroline", NAME),
        ("moving to New York soon", "new york", NAME),
        ("with Melanie Smith.", "melanie smith", NAME),
        ("at the University of Michigan", "university of michigan", NAME),
        ("Jean-Luc Picard said", "jean-luc picard", NAME),
        ("the O'Brien report", "o'brien", NAME),
        ("José called", "josé", NAME),
        ("trip to São Paulo", "são paulo", NAME),
        ("we upgraded Python 3.11", "python", NAME),
    ],
)
def test_each_kind(text: str, key: str, kind: EntityKind) -> None:
    assert found(text).get(key) == kind


@pytest.mark.parametrize(
    ("text", "absent"),
    [
        ("add 1/2 cup", "1/2"),
        ("due 12/05/2023", "12/05/2023"),
        ("due 2023/05/12", "2023/05/12"),
        ("this and/or that", "and/or"),
        ("the TCP/IP stack", "tcp/ip"),
        ("open 24/7", "24/7"),
        ("charged /month", "/month"),
        ("see https://example.com/a/b/c", "/a/b/c"),
        ("see https://example.com/a/b/c", "a/b/c"),
        ("mail alice@example.com", "@example.com"),
        ("mail alice@example.com", "example.com"),
        ("meet @5pm", "@5pm"),
        ("e.g. this", "e.g"),
        ("the U.S. office", "u.s"),
        ("in the 1990s", "1990s"),
        ("on the 8th", "8th"),
        ("at 10am", "10am"),
        ("it is OK", "ok"),
        ("I said A", "i"),
        ("LOL that was fun", "lol"),
        ("this is NOT fine", "not"),
        ("TODO fix this", "todo"),
        ("an ALLCAPSWORD here", "allcapsword"),
        ("Thanks for that", "thanks"),
        ("The plan", "the"),
        ("That's great", "that's"),
        ("I'm here", "i'm"),
        ("See you on Monday", "monday"),
        ("back in May", "may"),
        ("it is state-of-the-art", "state-of-the-art"),
        ("x y z", "x"),
        ("plain lowercase words only", "plain"),
    ],
)
def test_look_alikes_are_not_entities(text: str, absent: str) -> None:
    assert absent not in found(text)


@pytest.mark.parametrize(
    ("text", "keys"),
    [
        ("Yes! Thanks Caroline. That's great, I'm fine.", ["caroline"]),
        ("The Beatles played. Well, Oh well.", ["beatles"]),
        ("Caroline's mom met Melanie's dog", ["caroline", "melanie"]),
        ("Caroline\u2019s idea", ["caroline"]),
        ("James' car", ["james"]),
        ("Caroline's Mom", ["caroline", "mom"]),
        ("New York and New Jersey", ["new york", "new jersey"]),
        ("Bank of America", ["bank of america"]),
        ("Caroline of course", ["caroline"]),
        ("Caroline\nMelanie", ["caroline", "melanie"]),
        ("Caroline, Melanie", ["caroline", "melanie"]),
        ("AWS-hosted ChromaDB-backed store", ["aws", "chromadb"]),
    ],
)
def test_names_and_sentence_starts(text: str, keys: list[str]) -> None:
    assert entity_keys(text) == keys


def test_multi_word_name_yields_no_parts() -> None:
    keys = entity_keys("We moved to New York. Later New York got cold.")
    assert keys == ["new york"]


def test_order_of_first_occurrence_and_dedup() -> None:
    text = "Redis beat AWS; @ann asked Redis about aws and max_retries, then REDIS again"
    entities = extract_entities(text)
    assert [e.key for e in entities] == ["redis", "aws", "@ann", "max_retries"]
    assert entities[0] == Entity("redis", NAME, "Redis")


def test_spans_and_words_interleave_by_position() -> None:
    text = "Caroline edited src/app/main.py and pinged @bob about https://x.io/y then FastAPI"
    assert entity_keys(text) == ["caroline", "src/app/main.py", "@bob", "x.io/y", "fastapi"]


def test_explicit_entities_come_first_and_win_duplicates() -> None:
    entities = extract_entities("Caroline uses Redis", ["  Billing   Service ", "redis", "", "x"])
    assert [(e.key, e.kind) for e in entities] == [
        ("billing service", EntityKind.EXPLICIT),
        ("redis", EntityKind.EXPLICIT),
        ("caroline", NAME),
    ]
    assert entities[0].surface == "Billing Service"


@pytest.mark.parametrize("limit", [0, 1, 2, 5])
def test_limit(limit: int) -> None:
    text = "Alpha beat Bravo, Charlie, Delta and Echo"
    keys = entity_keys(text, ["explicit one"])
    assert [e.key for e in extract_entities(text, ["explicit one"], limit=limit)] == keys[:limit]


def test_negative_limit_is_rejected() -> None:
    with pytest.raises(ValueError, match="limit"):
        extract_entities("Caroline", limit=-1)


def test_default_limit_is_32() -> None:
    text = " ".join(f"item_{n}" for n in range(40))
    assert len(extract_entities(text)) == 32


@pytest.mark.parametrize("text", ["", "   ", "\n\t", "...", "a b c", "1 2 3"])
def test_nothing_to_find(text: str) -> None:
    assert extract_entities(text) == []


def test_entity_keys_matches_extract_entities() -> None:
    text = "Melanie moved the API to PostgreSQL in New York"
    assert entity_keys(text, ["Ops"]) == [e.key for e in extract_entities(text, ["Ops"])]


def test_idf_weights() -> None:
    weights = idf_weights({"rare": 1, "common": 10, "unseen": 0}, total_docs=10)
    assert weights["rare"] == pytest.approx(math.log(1 + 9.5 / 1.5))
    assert weights["common"] == pytest.approx(math.log(1 + 0.5 / 10.5))
    assert weights["unseen"] > weights["rare"] > weights["common"] > 0
    assert idf_weights({}, 0) == {}


@pytest.mark.parametrize(("doc_freq", "total"), [({"a": 3}, 2), ({"a": -1}, 5), ({}, -1)])
def test_idf_weights_rejects_impossible_counts(doc_freq: dict[str, int], total: int) -> None:
    with pytest.raises(ValueError, match="must be"):
        idf_weights(doc_freq, total)
