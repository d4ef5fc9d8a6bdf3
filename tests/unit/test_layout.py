"""The layout shows the architecture: a small service root, modules under 500 lines, no
import cycles, and transports that call use cases instead of driving the store."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("graph", "retrieval", "service")
TRANSPORTS = ("methods", "http", "cli", "client", "analyst", "rpc", "mcp")
MUTATION = re.compile(
    r"\.store\.(record|remember|update|review|set_lifecycle|link|link_many|unlink|supersede|"
    r"forget|import_graph)\(|retrieval\.writes|DualIndex\.open|ChromaVectorIndex\.|"
    r"DecisionStore\.open"
)


def modules(*packages: str) -> list[Path]:
    return sorted(p for package in packages for p in (ROOT / package).rglob("*.py"))


def test_the_service_root_holds_at_most_eight_modules() -> None:
    root = sorted(p.name for p in (ROOT / "service").glob("*.py"))
    assert len(root) <= 8, root


def test_no_module_is_over_500_lines() -> None:
    long = {
        str(p.relative_to(ROOT)): n
        for p in modules(*PACKAGES)
        if (n := len(p.read_text().splitlines())) > 500
    }
    assert long == {}


def test_no_import_cycles() -> None:
    spec = importlib.util.spec_from_file_location(
        "import_cycles", ROOT / "scripts/import_cycles.py"
    )
    assert spec is not None
    assert spec.loader is not None
    checker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(checker)
    found = checker.cycles(checker.graph_of(checker.collect(list(PACKAGES))))
    assert found == []


def test_the_adjacency_mirror_and_pagerank_have_different_names() -> None:
    assert not (ROOT / "graph" / "salience.py").exists()
    assert (ROOT / "graph" / "adjacency.py").exists()


def test_transports_call_use_cases_not_the_store() -> None:
    offenders = [
        f"{p.relative_to(ROOT)}:{number}: {line.strip()}"
        for package in TRANSPORTS
        for p in modules(f"service/{package}")
        for number, line in enumerate(p.read_text().splitlines(), start=1)
        if MUTATION.search(line)
    ]
    assert offenders == []


def test_every_error_derives_from_one_root() -> None:
    from graph.errors import DecigraphError
    from retrieval.vector import VectorIndexError
    from service.client import AnalystError
    from service.http.auth import AuthConfigError
    from service.usecases.rules import GuardrailBlockedError, GuardrailConfigError

    for error in (
        VectorIndexError,
        AnalystError,
        AuthConfigError,
        GuardrailBlockedError,
        GuardrailConfigError,
    ):
        assert issubclass(error, DecigraphError), error
