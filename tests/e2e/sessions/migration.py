"""An agent migrating a payments ledger from MySQL 5.7 to PostgreSQL 16 (project payments-ledger).

Written for the session test, not taken from any benchmark. Step keys are the names the test
uses for the decisions. ``flags`` are decisions the record must be raised as contradicting
(kept as suspected): only plain substitutions of the same setting, whose reading is not in
doubt; whether the judge raises anything else is its call, and the agent declares what it
raises beyond them compatible. ``contradicts`` are decisions the agent itself names as
contradicted (a confirmed edge); ``blocked_by`` a decision the gate must refuse the record for
(the decision is relied on): by the judge when the record is such a plain substitution, else
because the agent names it under ``contradicts``.
"""

from __future__ import annotations

from typing import Any

PROJECT = "payments-ledger"

STEPS: list[dict[str, Any]] = [
    {
        "key": "pg",
        "decision": "Move the payments ledger from MySQL 5.7 to PostgreSQL 16",
        "context": "MySQL 5.7 reaches end of life in October. The ledger needs native JSONB for "
        "settlement metadata and row-level security for the multi-tenant rollout.",
        "category": "architecture",
        "stakes": "high",
        "confidence": 0.85,
        "reasons": [
            {"type": "analysis", "text": "End of life of MySQL 5.7 forces a major upgrade anyway"},
            {"type": "constraint", "text": "Row-level security is required for tenant isolation"},
        ],
    },
    {
        "key": "rds",
        "decision": "Run the ledger's PostgreSQL on Amazon RDS Multi-AZ rather than "
        "self-managed EC2 instances",
        "context": "Nobody on the team wants to own failover scripts again.",
        "category": "architecture",
        "stakes": "high",
        "confidence": 0.8,
        "depends_on": ["pg"],
    },
    {
        "key": "pgbouncer",
        "decision": "Put PgBouncer in transaction pooling mode in front of the ledger database",
        "category": "architecture",
        "stakes": "medium",
        "confidence": 0.75,
        "depends_on": ["pg"],
    },
    {
        "key": "schema",
        "decision": "Convert the ledger schema with pgloader and hand-fix the enum and unsigned "
        "integer columns",
        "category": "tooling",
        "stakes": "medium",
        "confidence": 0.7,
        "depends_on": ["pg"],
    },
    {
        "key": "money",
        "decision": "Store monetary amounts as NUMERIC(19,4) in the new schema",
        "context": "Rounding in the old DOUBLE columns cost us a reconciliation incident in 2023.",
        "category": "architecture",
        "stakes": "high",
        "confidence": 0.9,
        "depends_on": ["schema"],
    },
    {
        "key": "cdc",
        "decision": "Replicate changes from MySQL to PostgreSQL with Debezium and Kafka Connect "
        "during the migration",
        "context": "Dual writes from the application were considered and rejected: two code "
        "paths for every write in a ledger is a reconciliation risk.",
        "category": "integration",
        "stakes": "high",
        "confidence": 0.75,
        "depends_on": ["pg"],
        "reasons": [
            {"type": "elimination", "text": "Application dual writes risk divergent ledgers"}
        ],
    },
    {
        "key": "window",
        "decision": "Cut over during a four-hour maintenance window on a Sunday night",
        "category": "process",
        "stakes": "high",
        "confidence": 0.6,
        "depends_on": ["cdc"],
    },
    {
        "key": "orm",
        "decision": "Upgrade SQLAlchemy to 2.0 and switch the ledger service to the psycopg 3 "
        "driver",
        "category": "tooling",
        "stakes": "medium",
        "confidence": 0.8,
        "depends_on": ["pg"],
    },
    {
        "key": "ci",
        "decision": "Run the ledger integration tests against PostgreSQL 16 in CI with "
        "Testcontainers",
        "category": "tooling",
        "stakes": "low",
        "confidence": 0.9,
        "depends_on": ["pg"],
    },
    {
        "key": "sqlite_dev",
        "decision": "Use SQLite in development for the ledger service's fast unit tests",
        "context": "Only the pure domain tests; anything touching SQL runs in CI on PostgreSQL.",
        "category": "tooling",
        "stakes": "low",
        "confidence": 0.7,
    },
    {
        "key": "backfill",
        "decision": "Backfill ledger entries older than 2019 with a single bulk COPY job",
        "category": "process",
        "stakes": "medium",
        "confidence": 0.6,
        "depends_on": ["schema"],
    },
    {
        "key": "checksums",
        "decision": "Verify the migration by comparing per-account balance checksums between "
        "MySQL and PostgreSQL every hour",
        "category": "process",
        "stakes": "high",
        "confidence": 0.85,
        "depends_on": ["cdc", "backfill"],
    },
    {
        "key": "replica",
        "decision": "Serve the finance reporting dashboards from a PostgreSQL read replica",
        "category": "architecture",
        "stakes": "medium",
        "confidence": 0.8,
        "depends_on": ["rds"],
    },
    {
        "key": "pitr",
        "decision": "Enable point-in-time recovery with 14 days of WAL retention on the ledger "
        "database",
        "category": "architecture",
        "stakes": "high",
        "confidence": 0.9,
        "depends_on": ["rds"],
    },
    {
        "key": "secrets",
        "decision": "Rotate the ledger database credentials through AWS Secrets Manager every "
        "30 days",
        "category": "security",
        "stakes": "medium",
        "confidence": 0.85,
        "depends_on": ["rds"],
    },
    {
        "key": "rls",
        "decision": "Enforce tenant isolation in the ledger with PostgreSQL row-level security "
        "policies",
        "category": "security",
        "stakes": "high",
        "confidence": 0.8,
        "depends_on": ["pg"],
    },
    {
        "key": "partition",
        "decision": "Partition the ledger_entries table by month",
        "category": "architecture",
        "stakes": "medium",
        "confidence": 0.75,
        "depends_on": ["schema"],
    },
    {
        "key": "partman",
        "decision": "Adopt pg_partman to create and retire the monthly partitions automatically",
        "category": "tooling",
        "stakes": "high",
        "confidence": 0.4,
        "depends_on": ["partition"],
    },
    {
        "key": "ramp",
        "decision": "Route ledger reads to PostgreSQL behind the ledger_pg_reads feature flag, "
        "ramping 1%, 10%, 50% and 100%",
        "category": "process",
        "stakes": "high",
        "confidence": 0.8,
        "depends_on": ["cdc", "checksums"],
    },
    {
        "key": "lag_alert",
        "decision": "Alert when Debezium replication lag exceeds 30 seconds",
        "category": "tooling",
        "stakes": "medium",
        "confidence": 0.9,
        "depends_on": ["cdc"],
    },
    {
        "key": "fallback",
        "decision": "Keep MySQL writable for seven days after cutover as the rollback path",
        "category": "process",
        "stakes": "high",
        "confidence": 0.7,
        "depends_on": ["window"],
    },
    {
        "key": "runbook",
        "decision": "Write the cutover runbook and rehearse it twice on the staging copy",
        "category": "process",
        "stakes": "medium",
        "confidence": 0.9,
        "depends_on": ["window"],
    },
    {"review": "cdc", "outcome": "success", "result": "Lag under 2 s for a week of traffic"},
    {"review": "rds", "outcome": "success", "result": "Failover drill took 48 s"},
    {
        "review": "backfill",
        "outcome": "failure",
        "result": "The single COPY ran for 30 hours and was killed by the statement timeout",
        "lessons": "Chunk long backfills so one failure does not restart everything",
    },
    {
        "key": "chunked",
        "decision": "Backfill the pre-2019 ledger entries in parallel monthly chunks with pgloader",
        "context": "The single bulk COPY failed after 30 hours; monthly chunks can be retried "
        "one at a time.",
        "category": "process",
        "stakes": "medium",
        "confidence": 0.8,
        "supersedes": ["backfill"],
        "caused_by": ["backfill"],
    },
    {
        "key": "no_downtime",
        "decision": "Cut over with zero downtime by moving writes to PostgreSQL one merchant "
        "cohort at a time",
        "context": "Merchants in APAC trade on Sunday nights, so a four-hour window is not "
        "acceptable after all.",
        "category": "process",
        "stakes": "high",
        "confidence": 0.75,
        "supersedes": ["window"],
        "depends_on": ["cdc"],
    },
    {
        "key": "keep_mysql",
        "decision": "Keep MySQL 8 as the primary datastore for the payments ledger and drop the "
        "PostgreSQL migration",
        "context": "Upgrading in place from 5.7 to 8.0 would be less work this quarter.",
        "category": "architecture",
        "stakes": "high",
        "confidence": 0.5,
        "contradicts": ["pg"],
        "blocked_by": "pg",
    },
    {
        "key": "onboarding_mysql",
        "decision": "Use MySQL 8 for the merchant onboarding service, which stays out of scope "
        "of the ledger migration",
        "category": "architecture",
        "stakes": "low",
        "confidence": 0.8,
    },
    {
        "key": "pool40",
        "decision": "Size the PgBouncer pool at 40 server connections per database",
        "category": "architecture",
        "stakes": "low",
        "confidence": 0.6,
        "refines": ["pgbouncer"],
    },
    {
        "key": "pool80",
        "decision": "Size the PgBouncer pool at 80 server connections per database",
        "context": "Load tests at twice peak saturated 40 connections within a minute.",
        "category": "architecture",
        "stakes": "low",
        "confidence": 0.7,
        "flags": ["pool40"],
    },
    {
        "key": "dd_metrics",
        "decision": "Use Datadog for the ledger cluster's database metrics",
        "category": "tooling",
        "stakes": "low",
        "confidence": 0.9,
    },
    {
        "key": "dd_logs",
        "decision": "Use Datadog for the ledger service's application logs",
        "category": "tooling",
        "stakes": "low",
        "confidence": 0.9,
    },
    {
        "key": "kms",
        "decision": "Encrypt the ledger database at rest with a customer-managed KMS key",
        "category": "security",
        "stakes": "high",
        "confidence": 0.8,
        "depends_on": ["rds"],
    },
    {
        "key": "share_snapshots",
        "decision": "Share encrypted ledger snapshots with the analytics account nightly",
        "category": "integration",
        "stakes": "medium",
        "confidence": 0.7,
        "depends_on": ["kms"],
    },
    {
        "review": "kms",
        "outcome": "failure",
        "result": "The key policy did not allow the analytics account to use the key",
        "lessons": "Draft cross-account key policies before encrypting",
    },
    {
        "key": "decommission",
        "decision": "Decommission the MySQL 5.7 ledger cluster two weeks after the last "
        "merchant cohort moves",
        "category": "process",
        "stakes": "medium",
        "confidence": 0.8,
        "depends_on": ["no_downtime", "fallback"],
    },
]

#: A question an agent asks later, and decisions that must come back for it.
WHY = (
    "Why did we split the ledger backfill into monthly chunks?",
    {"chunked", "backfill"},
)

#: The ready queue after the session: (action type, decision key), nothing else.
READY = {("unblock", "share_snapshots"), ("low_confidence", "partman")}

#: Superseded decisions and their successors.
SUPERSEDED = {"window": "no_downtime", "backfill": "chunked"}
