"""Decision statements read as stances, and when two of them contradict (issue 12, point 2).

The pairs are written for these tests across domains (storage, messaging, infrastructure,
languages, process, security, product); every verdict is checked in both orders.
"""

from __future__ import annotations

import pytest

from retrieval.stance import parse
from retrieval.stance_compare import conflict
from retrieval.stance_scope import take_scope_and_values

CONTRADICTING = [
    # storage: the headline pair, with a version on one side
    (
        "Use MySQL as the primary datastore for the payments ledger",
        "Use PostgreSQL 16 as the primary datastore for the payments ledger",
    ),
    ("Use DynamoDB as the primary database for user profiles", "Store user profiles in PostgreSQL"),
    ("Keep user profiles in PostgreSQL", "Move user profiles to DynamoDB"),
    ("Use Elasticsearch for product search", "Use OpenSearch for product search"),
    ("Use Redis for session storage", "Store sessions in Memcached"),
    ("The primary datastore is PostgreSQL", "Use MySQL as the primary datastore"),
    (
        "PostgreSQL is the primary datastore for the payments ledger",
        "Use MySQL as the primary datastore for the payments ledger",
    ),
    ("Use MySQL for the orders service", "Migrate the orders service from MySQL to PostgreSQL"),
    # messaging
    ("Use Kafka for payment events", "Use RabbitMQ for payment events"),
    ("Use Kafka for payment events", "Payment events go through RabbitMQ"),
    ("Publish order events to Kafka", "Use Google Pub/Sub for order events"),
    ("Use SQS for background jobs", "Use RabbitMQ for background jobs"),
    ("Do not use Kafka for order events; use NATS", "Use Kafka for order events"),
    ("Use Kafka over RabbitMQ for payment events", "Use RabbitMQ for payment events"),
    ("Use Kafka for payment events", "Do not use Kafka"),
    # infrastructure
    ("Use Terraform for all infrastructure", "Use Pulumi for all infrastructure"),
    ("Use Terraform for all infrastructure", "Manage all infrastructure with Pulumi"),
    ("Use Terraform for all infrastructure", "All infrastructure is managed with Pulumi"),
    (
        "Provision infrastructure with Terraform",
        "Use CloudFormation for infrastructure provisioning",
    ),
    ("Run on EC2 VMs instead of Kubernetes", "Deploy all services on Kubernetes"),
    ("Do not use Kubernetes", "Deploy all services on Kubernetes"),
    ("Host the API on AWS", "Host the API on Google Cloud"),
    ("Use ECS for container orchestration", "Use Kubernetes for container orchestration"),
    ("Run the batch jobs on Lambda", "Run the batch jobs on Fargate"),
    ("Replace Jenkins with GitHub Actions for CI", "Use Jenkins for CI"),
    ("Switch from Jenkins to GitHub Actions", "Keep Jenkins"),
    # languages
    ("Write new backend services in Go", "Write new backend services in Rust"),
    ("Prefer Go over Java for new backend services", "Use Java for new backend services"),
    ("Use Kotlin for the Android app", "Write the Android app in Java"),
    ("Use Python for data pipelines", "Write data pipelines in Scala"),
    ("Use TypeScript for the frontend", "Use JavaScript for the frontend"),
    ("Use Python 3.12 for all services", "Use Python 3.11 for all services"),
    ("Standardise on Java 21 for backend services", "Standardise on Java 17 for backend services"),
    ("Use Poetry for dependency management", "Use uv for dependency management"),
    ("Use pytest for unit tests", "Use unittest for unit tests"),
    # options nobody has heard of parse like famous ones
    ("Use Zorblax for payment events", "Use quuxmq for payment events"),
    # process
    ("Deploy on Fridays", "No deploys on Fridays"),
    ("Deploy on Fridays", "Never deploy on Fridays"),
    ("Deploy on Fridays", "Deploys are not allowed on Fridays"),
    ("Allow deploys on Fridays", "No deploys on Fridays"),
    ("Release every two weeks", "Release every week"),
    ("On-call rotation is weekly", "On-call rotation is biweekly"),
    ("Squash merge all pull requests", "Do not squash merge pull requests"),
    ("Freeze deploys during the holiday season", "Allow deploys during the holiday season"),
    ("Require two approvals for every PR", "Require one approval for every PR"),
    ("Code freeze starts on December 15", "Code freeze starts on December 20"),
    # numeric policies
    ("Keep logs for 30 days", "Retain logs for 90 days"),
    ("Cache API responses for 5 minutes", "Cache API responses for 1 hour"),
    ("Use 3 replicas for the API deployment", "Use 5 replicas for the API deployment"),
    # security
    ("Require MFA for all admin accounts", "Make MFA optional for admin accounts"),
    ("Require MFA for all admin accounts", "Admin accounts do not require MFA"),
    ("Require SSO for all internal tools", "SSO is optional for internal tools"),
    ("Enable MFA for admin accounts", "Disable MFA for admin accounts"),
    ("Allow password login for admins", "Disable password login for admins"),
    ("Rotate database credentials every 30 days", "Rotate database credentials every 90 days"),
    ("Encrypt backups at rest", "Do not encrypt backups"),
    ("Use TLS 1.3 for all external endpoints", "Use TLS 1.2 for all external endpoints"),
    ("Use Vault for secrets", "Store secrets in AWS Secrets Manager"),
    ("MongoDB is not allowed for new services", "Use MongoDB for new services"),
    # product
    ("Launch in Q3", "Delay the launch to Q4"),
    ("Launch the mobile app in Q3", "Postpone the mobile app launch to Q1 2026"),
    ("Price the Pro plan at $20/month", "Price the Pro plan at $25/month"),
    ("Offer a free tier", "Do not offer a free tier"),
    ("Sunset the legacy dashboard", "Keep the legacy dashboard"),
    ("Support IE11", "Drop support for IE11"),
    # a rule for every member of a class, and a member that breaks it
    (
        "Every event in the payments domain goes through Kafka",
        "The payments refund service publishes its events to RabbitMQ",
    ),
    (
        "Deploy all services in the payments domain on Kubernetes",
        "Run the payments ledger service on Nomad",
    ),
    # scoped alike on both sides
    ("Use PostgreSQL for the ledger in production", "Use MySQL for the ledger in production"),
]

COMPATIBLE = [
    # same tool, another purpose
    ("Use Datadog for metrics", "Use Datadog for logs"),
    ("Use S3 for backups", "Use S3 for static assets"),
    ("Use Redis for caching", "Use Redis for rate limiting"),
    ("Use Elasticsearch for product search", "Use Elasticsearch for log search"),
    ("Use Vault for secrets", "Use Vault for PKI certificates"),
    # different purposes, different tools
    ("Use PostgreSQL for OLTP workloads", "Use ClickHouse for analytics"),
    ("Use SQS for background jobs", "Use SNS for fan-out notifications"),
    ("Write the billing service in Go", "Deploy the billing service on Kubernetes"),
    ("Use Kotlin for the Android app", "Use Swift for the iOS app"),
    ("Use Go for the billing service", "Use Rust for the search service"),
    ("Use REST for the public API", "Use gRPC for internal service calls"),
    ("Use Sentry for error tracking", "Use Datadog for APM"),
    ("Host the API on AWS", "Host the marketing site on Vercel"),
    ("Use pytest for unit tests", "Use Playwright for end-to-end tests"),
    # refinements: the same choice with more detail
    ("Use PostgreSQL 16 with pgBouncer in transaction mode", "Use PostgreSQL"),
    ("Use PostgreSQL for the orders service", "Use PostgreSQL 15 for the orders service"),
    ("Use Kafka for payment events", "Use Kafka for payment events with exactly-once semantics"),
    ("Use Kafka for order events", "Use Kafka with 12 partitions for order events"),
    (
        "Use Terraform for all infrastructure",
        "Use Terraform 1.6 with remote state in S3 for all infrastructure",
    ),
    ("Deploy all services on Kubernetes", "Deploy all services on Kubernetes using Helm charts"),
    ("Encrypt backups at rest with KMS", "Encrypt backups at rest"),
    ("Use Python 3.12", "Use Python 3.12 with uv for dependency management"),
    ("Use Prometheus and Grafana for monitoring", "Use Grafana for monitoring"),
    ("Use Kafka for payment events", "Use Kafka for payment events and audit logs"),
    # scoped variants: a scoped exception, or disjoint scopes
    (
        "Use SQLite for the primary datastore in development",
        "Use PostgreSQL as the primary datastore",
    ),
    ("Use SQLite in development", "Use PostgreSQL as the primary datastore"),
    ("Use SQLite for local development", "Use PostgreSQL in production"),
    ("Use PostgreSQL in production", "Use MySQL in staging"),
    ("Use PostgreSQL in the EU", "Use MySQL in the US"),
    ("Run the batch jobs on Lambda in us-east-1", "Run the batch jobs on Fargate in eu-west-1"),
    ("Adopt NATS for internal messaging in development", "Use Kafka for internal messaging"),
    ("Launch in the EU in Q3", "Launch in the US in Q4"),
    ("Store secrets in Vault in production", "Keep secrets in .env files in development"),
    # a narrower purpose is an exception, not a rival
    (
        "Use PostgreSQL as the primary datastore",
        "Use MySQL as the primary datastore for the analytics service",
    ),
    ("Use Redis", "Do not use Redis for session storage"),
    # a member that shares only the class noun with the rule
    ("All services use Go", "The search service uses Redis"),
    # unrelated, or only sharing tokens ("p95", "Q3")
    ("Use Redis for session storage", "Never deploy on Fridays"),
    ("Keep p95 latency under 200 ms for checkout", "Keep p99 latency under 500 ms for checkout"),
    ("Use p95 latency as the SLO metric", "Review the p95 dashboards in Q3"),
    ("Launch in Q3", "Hire two engineers in Q3"),
    ("Ship dark mode in Q3", "Ship the new onboarding flow in Q3"),
    ("Rotate secrets every 90 days", "Rotate API keys every 30 days"),
    ("Allow deploys on Fridays", "No deploys on Mondays"),
    ("Do not deploy on Fridays", "Deploy on Mondays"),
    ("Use PostgreSQL for the payments ledger", "Back up the payments ledger to S3 nightly"),
    ("Use Kafka for payment events", "Retain payment events for 7 days"),
    ("Use Terraform for all infrastructure", "Store Terraform state in S3"),
    ("Use GitHub Actions for CI", "Use GitHub for code hosting"),
    ("Do not store PII in logs", "Store logs in Loki"),
    ("Avoid ORMs in the reporting service", "Use SQLAlchemy in the billing service"),
    ("Use PostgreSQL as the primary datastore", "Use pgBouncer for connection pooling"),
    ("Write the CLI in Rust", "Write the web backend in Python"),
    ("Offer a free tier", "Offer a 14-day free trial"),
    ("Write new services in TypeScript", "Keep existing services in JavaScript"),
    # a pilot commits to nothing; two undirected choices have no common subject
    ("Pilot Kafka for the event pipeline", "Use RabbitMQ for the event pipeline"),
    ("Evaluate Pulumi for infrastructure", "Use Terraform for all infrastructure"),
    ("Use PostgreSQL", "Use MySQL"),
]


@pytest.mark.parametrize(("a", "b"), CONTRADICTING)
def test_contradicting_pairs_are_flagged_both_ways(a: str, b: str) -> None:
    forward, backward = conflict(parse(a), parse(b)), conflict(parse(b), parse(a))
    assert forward is not None, (a, b)
    assert backward is not None, (b, a)
    assert forward.kind == backward.kind


@pytest.mark.parametrize(("a", "b"), COMPATIBLE)
def test_compatible_pairs_are_not_flagged_either_way(a: str, b: str) -> None:
    assert conflict(parse(a), parse(b)) is None, (a, b)
    assert conflict(parse(b), parse(a)) is None, (b, a)


def test_the_reason_names_the_options_and_the_purpose() -> None:
    found = conflict(
        parse("Use MySQL as the primary datastore for the payments ledger"),
        parse("Use PostgreSQL 16 as the primary datastore for the payments ledger"),
    )
    assert found is not None
    assert found.kind == "choice"
    assert found.reason == (
        "different choice as the primary datastore for the payments ledger: MySQL vs PostgreSQL 16"
    )
    rejection = conflict(parse("Use Redis for sessions"), parse("Do not use Redis"))
    assert rejection is not None
    assert (rejection.kind, rejection.reason) == (
        "rejection",
        "Redis for sessions: adopted by one, rejected by the other",
    )
    value = conflict(parse("Keep logs for 30 days"), parse("Retain logs for 90 days"))
    assert value is not None
    assert (value.kind, value.reason) == ("value", "logs: 30 days vs 90 days")
    force = conflict(parse("Require MFA for admins"), parse("Make MFA optional for admins"))
    assert force is not None
    assert force.kind == "force"


@pytest.mark.parametrize(
    ("text", "chosen", "rejected"),
    [
        ("Use Kafka for payment events", ("Kafka",), ()),
        ("Adopt gRPC for internal calls", ("gRPC",), ()),
        ("Standardise on Python 3.12 for all services", ("Python 3.12",), ()),
        ("Go with Kafka for the event pipeline", ("Kafka",), ()),
        ("Switch to GitHub Actions", ("GitHub Actions",), ()),
        ("Migrate the ledger from MySQL to PostgreSQL", ("PostgreSQL",), ("MySQL",)),
        ("Move the ledger to PostgreSQL", ("PostgreSQL",), ()),
        ("Use Kafka over RabbitMQ for payment events", ("Kafka",), ("RabbitMQ",)),
        ("Use Kafka instead of RabbitMQ", ("Kafka",), ("RabbitMQ",)),
        ("Use Kafka rather than RabbitMQ", ("Kafka",), ("RabbitMQ",)),
        ("Use Kafka, not RabbitMQ, for payment events", ("Kafka",), ("RabbitMQ",)),
        ("Replace Jenkins with GitHub Actions", ("GitHub Actions",), ("Jenkins",)),
        ("Keep MySQL for the ledger", ("MySQL",), ()),
        ("Do not use MongoDB for the catalogue; use PostgreSQL", ("PostgreSQL",), ("MongoDB",)),
        ("Avoid MongoDB", (), ("MongoDB",)),
        ("Drop Jenkins", (), ("Jenkins",)),
        ("No MongoDB for new services", (), ("MongoDB",)),
        ("Ban MongoDB", (), ("MongoDB",)),
        ("Stop using Jenkins", (), ("Jenkins",)),
        ("MongoDB is not allowed", (), ("MongoDB",)),
        ("Drop MongoDB in favour of PostgreSQL", ("PostgreSQL",), ("MongoDB",)),
        ("Run on EC2 VMs instead of Kubernetes", ("EC2 VMs",), ("Kubernetes",)),
        ("We will use ClickHouse for analytics because it is fast", ("ClickHouse",), ()),
        ("Pilot Kafka for the event pipeline", (), ()),
    ],
)
def test_chosen_and_rejected_options(
    text: str, chosen: tuple[str, ...], rejected: tuple[str, ...]
) -> None:
    stance = parse(text)
    assert (stance.chosen, stance.rejected) == (chosen, rejected)


def test_option_names_are_normalised() -> None:
    (pg,) = parse("Use PostgreSQL 16 for the ledger").claims
    assert (pg.option.key, pg.option.version) == ("postgresql", "16")
    assert parse("Use Postgres for the ledger").claims[0].option.key == "postgresql"
    assert parse("Deploy on k8s").claims[0].option.key == "kubernet"
    assert parse("Deploy on Kubernetes").claims[0].option.key == "kubernet"
    assert parse("Use Apache Kafka").claims[0].option.key == "kafka"
    assert parse("Run on EC2 VMs").claims[0].option.key == "ec2"


def test_the_subject_is_the_purpose_without_generic_words() -> None:
    primary = parse("Use PostgreSQL as the primary datastore for the payments ledger").subject
    assert primary == {"databas", "payment", "ledger"}
    assert parse("Use Terraform for all infrastructure").subject == {"infrastructur"}
    assert parse("Use Datadog for metrics").subject == {"metric"}
    assert parse("Use Kafka").subject == frozenset()


@pytest.mark.parametrize(
    ("text", "environments", "regions"),
    [
        ("Use SQLite in development", {"development"}, set()),
        ("Use SQLite for local development", {"development"}, set()),
        ("Use SQLite locally", {"development"}, set()),
        ("Use PostgreSQL in staging and production", {"staging", "production"}, set()),
        ("Use an in-memory queue in tests", {"test"}, set()),
        ("Run the jobs in CI", {"ci"}, set()),
        ("Use PostgreSQL in the EU", set(), {"eu"}),
        ("Deploy to us-east-1 in production", {"production"}, {"us:us-east-1"}),
        ("Store customer data in Europe", set(), {"eu"}),
        ("Use PostgreSQL across all environments", set(), set()),
        ("Use Redis for the development team", set(), set()),
        ("Use pytest for unit tests", set(), set()),
    ],
)
def test_scope_qualifiers(text: str, environments: set[str], regions: set[str]) -> None:
    scope = parse(text).scope
    assert (set(scope.environments), set(scope.regions)) == (environments, regions)


def test_named_targets_are_scope_qualifiers_and_part_of_the_subject() -> None:
    stance = parse("Use PostgreSQL for the billing service")
    assert stance.scope.targets == {"bill servic"}
    assert stance.subject == {"bill", "servic"}


@pytest.mark.parametrize(
    ("clause", "rest", "values"),
    [
        ("Keep logs for 30 days", "Keep logs", [("duration", "2.592e+06", "30 days")]),
        ("Launch in Q3", "Launch", [("when", "q3", "Q3")]),
        ("Delay the launch to Q4 2026", "Delay the launch", [("when", "q4 2026", "Q4 2026")]),
        ("Keep p95 latency under 200 ms", "Keep p95 latency", [("duration", "0.2", "200 ms")]),
        ("Price the plan at $20/month", "Price the plan", [("money/month", "20", "$20/month")]),
        ("Run the report at 02:00 UTC", "Run the report", [("time", "02:00", "02:00 UTC")]),
        ("Rotate keys weekly", "Rotate keys", [("duration", "604800", "weekly")]),
        ("Use PostgreSQL 16", "Use PostgreSQL 16", []),
    ],
)
def test_values_are_read_out_of_the_clause(
    clause: str, rest: str, values: list[tuple[str, str, str]]
) -> None:
    text, _, found = take_scope_and_values(clause)
    assert (text, list(found)) == (rest, values)


def test_reasons_and_asides_do_not_count() -> None:
    plain = parse("Use Redis for session storage")
    for text in (
        "Use Redis for session storage because we do not want to run Memcached",
        "Use Redis for session storage since nothing else is allowed",
        "Use Redis for session storage (not Memcached, which we dropped)",
    ):
        assert [(c.mode, c.option.key) for c in parse(text).claims] == [
            (c.mode, c.option.key) for c in plain.claims
        ], text


def test_a_statement_without_a_decision_has_no_conflicts() -> None:
    for text in ("", "   ", "Thanks!", "it"):
        assert conflict(parse(text), parse("Use Redis for session storage")) is None
