"""The vocabulary of the sample store: a fictional shop's five projects and what they decide.

Plain data, read by :mod:`service.sample`. Every template is filled from seeded choices, so the
same seed always gives the same decisions.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Component:
    """One system a project owns, with the technologies it may move between."""

    name: str
    project: str
    options: tuple[str, ...]
    stakes: str
    vendor: str | None = None


COMPONENTS: tuple[Component, ...] = (
    Component("payment gateway", "checkout", ("Stripe", "Adyen", "Braintree"), "critical", "PSP"),
    Component("order store", "checkout", ("PostgreSQL", "CockroachDB", "Aurora"), "critical"),
    Component("cart service", "checkout", ("Redis", "DynamoDB", "PostgreSQL"), "high"),
    Component("tax engine", "checkout", ("Avalara", "TaxJar", "an in-house rules table"), "high"),
    Component("fraud screening", "checkout", ("Sift", "Signifyd", "Stripe Radar"), "high"),
    Component("ranking model", "search", ("BM25", "LightGBM", "a two-tower model"), "high"),
    Component("search index", "search", ("Elasticsearch", "OpenSearch", "Vespa"), "high"),
    Component(
        "autocomplete", "search", ("a prefix trie", "Redis sorted sets", "Typesense"), "medium"
    ),
    Component("synonym list", "search", ("a curated YAML file", "WordNet", "click logs"), "low"),
    Component("service mesh", "platform", ("Linkerd", "Istio", "Cilium"), "high"),
    Component("CI pipeline", "platform", ("GitHub Actions", "Buildkite", "Jenkins"), "medium"),
    Component("Kubernetes cluster", "platform", ("EKS", "GKE", "k3s"), "critical"),
    Component("secrets store", "platform", ("Vault", "AWS Secrets Manager", "SOPS"), "critical"),
    Component(
        "observability stack", "platform", ("Prometheus", "Datadog", "Grafana Cloud"), "high"
    ),
    Component("offline sync", "mobile", ("SQLite", "Realm", "WatermelonDB"), "medium"),
    Component("push notifications", "mobile", ("Firebase", "OneSignal", "APNs directly"), "medium"),
    Component("release train", "mobile", ("a two-week train", "weekly trains", "on-demand"), "low"),
    Component("crash reporting", "mobile", ("Crashlytics", "Sentry", "Bugsnag"), "low"),
    Component("feature flags", "mobile", ("LaunchDarkly", "Unleash", "a config file"), "medium"),
    Component("event warehouse", "data", ("BigQuery", "Snowflake", "ClickHouse"), "high"),
    Component("nightly ETL", "data", ("Airflow", "Dagster", "dbt Cloud"), "medium"),
    Component(
        "consent tracking", "data", ("OneTrust", "an in-house ledger", "Segment"), "critical"
    ),
    Component("metrics layer", "data", ("dbt metrics", "Cube", "LookML"), "medium"),
)

PROJECTS: tuple[str, ...] = ("checkout", "search", "platform", "mobile", "data")

AGENTS: dict[str, str] = {
    "checkout": "checkout-agent",
    "search": "search-agent",
    "platform": "platform-agent",
    "mobile": "mobile-agent",
    "data": "data-agent",
}

# Detail decisions: (category, template). ``{c}`` is the component, ``{o}`` its current option,
# ``{n}`` a seeded number.
DETAILS: tuple[tuple[str, str], ...] = (
    ("architecture", "Retry failed {c} calls {n} times with exponential backoff and jitter"),
    ("architecture", "Put a {n} ms timeout on every call to the {c}"),
    ("architecture", "Cache {c} reads for {n} seconds in front of {o}"),
    ("architecture", "Shard the {c} by customer id into {n} partitions on {o}"),
    ("architecture", "Make every write to the {c} idempotent with a request key"),
    ("tooling", "Run load tests of the {c} at {n}x peak traffic before each release"),
    ("tooling", "Generate the {c} client from its OpenAPI schema instead of writing it"),
    ("tooling", "Track {c} error budgets on a dashboard with a {n}-day window"),
    ("tooling", "Pin {o} to one minor version for the {c} and upgrade quarterly"),
    ("process", "Require two reviewers for changes to the {c}"),
    ("process", "Roll out {c} changes behind a flag to {n}% of traffic first"),
    ("process", "Hold a blameless review within {n} days of every {c} incident"),
    ("process", "Page the owning team when the {c} error rate passes {n} per mille"),
    ("security", "Rotate the {c} credentials every {n} days"),
    ("security", "Encrypt {c} data at rest with per-tenant keys"),
    ("security", "Restrict {c} admin access to the on-call group with {n}-hour grants"),
    ("integration", "Publish {c} changes as events on the order bus for other teams"),
    ("integration", "Expose the {c} to partners through a versioned REST API"),
    ("integration", "Send {c} audit logs to the event warehouse every {n} minutes"),
)

NUMBERS: tuple[int, ...] = (2, 3, 5, 10, 15, 30, 45, 60, 90, 250, 500, 800)

WHY_CHOOSE: tuple[str, ...] = (
    "it had the lowest p95 latency in our benchmark",
    "the team already runs it in production elsewhere",
    "its pricing fits the budget at our volume",
    "it is the only option with the compliance certificates we need",
    "it removes a service we would otherwise operate ourselves",
    "the vendor's support answered within the hour during the trial",
)

WHY_REPLACE: tuple[str, ...] = (
    "it could not keep up with peak traffic",
    "its costs tripled after the pricing change",
    "the vendor deprecated the API we depend on",
    "two outages in a month broke our error budget",
    "the migration tooling finally makes the switch cheap",
    "the security review found gaps we cannot close in it",
)

INCIDENTS: tuple[str, ...] = (
    "{c} latency p95 rose to {n}00 ms during the evening peak",
    "{c} returned errors for {n} minutes after a config push",
    "{c} lost writes during a failover; {n} orders had to be replayed",
    "{c} costs were {n}% over forecast this month",
)

REASON_TYPES: dict[str, str] = {
    "architecture": "analysis",
    "tooling": "empirical",
    "process": "pattern",
    "security": "constraint",
    "integration": "analysis",
}

# Over-confidence by category (the sample's calibration story): the probability of success is
# the stated confidence minus this much.
OVERCONFIDENCE: dict[str, float] = {
    "architecture": 0.20,
    "tooling": 0.05,
    "process": 0.0,
    "security": -0.05,
    "integration": 0.12,
}

# Opposing pairs recorded by different teams; the second contradicts the first.
CONFLICTS: tuple[tuple[str, str, str, str], ...] = (
    (
        "search",
        "Cache product pages at the edge for 10 minutes to cut search latency",
        "checkout",
        "Never cache product pages: prices shown must always be live",
    ),
    (
        "platform",
        "Deploy every service through the shared Kubernetes cluster only",
        "data",
        "Run the nightly ETL on dedicated VMs outside Kubernetes",
    ),
    (
        "mobile",
        "Ship mobile releases on a fixed two-week train",
        "checkout",
        "Release checkout fixes to the mobile app on demand, outside the train",
    ),
    (
        "data",
        "Keep raw clickstream events for 25 months for analytics",
        "platform",
        "Delete raw clickstream events after 90 days to limit personal data",
    ),
    (
        "checkout",
        "Allow guest checkout without an account",
        "data",
        "Require an account for every order so consent can be tracked",
    ),
    (
        "search",
        "Personalise search ranking with purchase history by default",
        "data",
        "Do not use purchase history in ranking without explicit consent",
    ),
)

# Freezes: (project, text, the component whose later work it blocks).
FREEZES: tuple[tuple[str, str, str], ...] = (
    (
        "checkout",
        "Freeze schema changes to the order store until the PCI audit closes",
        "order store",
    ),
    (
        "platform",
        "Freeze service mesh upgrades until the Kubernetes migration ends",
        "service mesh",
    ),
    (
        "data",
        "Freeze new consent tracking fields until legal signs off the DPA",
        "consent tracking",
    ),
    ("search", "Freeze ranking model changes until the A/B platform is fixed", "ranking model"),
    (
        "mobile",
        "Freeze push notification campaigns until opt-in rates recover",
        "push notifications",
    ),
)
