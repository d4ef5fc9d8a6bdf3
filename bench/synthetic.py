"""Seeded, realistic-looking decision texts and graphs for benchmarks and samples."""

from __future__ import annotations

import random
from dataclasses import dataclass

SYSTEMS = [
    "PostgreSQL",
    "Redis",
    "Kafka",
    "ChromaDB",
    "FastAPI",
    "Kubernetes",
    "Terraform",
    "gRPC",
    "GraphQL",
    "S3",
    "Celery",
    "NetworkX",
    "Prometheus",
    "Grafana",
    "OAuth2",
    "Vault",
    "SQLite",
    "RabbitMQ",
    "Elasticsearch",
    "Nginx",
    "Docker",
    "GitHub Actions",
    "pytest",
]
VERBS = ["Use", "Adopt", "Migrate to", "Replace the legacy stack with", "Standardise on", "Pilot"]
PURPOSES = [
    "for the billing ledger",
    "for session storage",
    "for the event pipeline",
    "for feature flags",
    "for the recall service",
    "for audit logging",
    "for CI caching",
    "for the analytics warehouse",
    "for secrets management",
    "for the public API",
]
REASONS = [
    "because the current setup drops writes under load",
    "since the team already operates it in production",
    "as it halves the p95 latency in our benchmark",
    "due to licensing constraints on the alternative",
    "given the compliance review in Q3",
    "to remove a single point of failure",
]
CATEGORIES = ["architecture", "process", "integration", "tooling", "security"]
STAKES = ["low", "medium", "high", "critical"]
PROJECTS = ["ledger", "recall", "platform", "web", "data"]


@dataclass(frozen=True)
class DecisionSpec:
    text: str
    category: str
    stakes: str
    confidence: float
    tags: list[str]
    project: str


def decision_spec(rng: random.Random) -> DecisionSpec:
    system = rng.choice(SYSTEMS)
    text = f"{rng.choice(VERBS)} {system} {rng.choice(PURPOSES)} {rng.choice(REASONS)}"
    return DecisionSpec(
        text=text,
        category=rng.choice(CATEGORIES),
        stakes=rng.choices(STAKES, weights=[4, 6, 3, 1])[0],
        confidence=round(rng.uniform(0.4, 0.98), 2),
        tags=sorted({system.lower().replace(" ", "-"), rng.choice(PROJECTS)}),
        project=rng.choice(PROJECTS),
    )


EDGE_MIX = [
    ("relates_to", 30),
    ("depends_on", 25),
    ("semantic", 15),
    ("entity", 10),
    ("refines", 6),
    ("caused_by", 5),
    ("temporal", 4),
    ("supersedes", 2),
    ("blocks", 2),
    ("contradicts", 1),
]


def edge_type(rng: random.Random) -> str:
    return rng.choices([t for t, _ in EDGE_MIX], weights=[w for _, w in EDGE_MIX])[0]


def skewed_target(rng: random.Random, upto: int) -> int:
    """An earlier node index, biased towards a few hubs (heavy-tailed in-degree)."""
    return min(upto - 1, int(upto * rng.random() ** 3))
