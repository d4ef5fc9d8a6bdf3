"""An on-call agent handling a checkout outage, from the SEV-1 to the postmortem actions
(project checkout). Written for the session test; step format as in :mod:`.migration`."""

from __future__ import annotations

from typing import Any

PROJECT = "checkout"

STEPS: list[dict[str, Any]] = [
    {
        "key": "sev1",
        "decision": "Declare a SEV-1 for elevated checkout API error rates",
        "context": "5xx responses on POST /checkout climbed from 0.2% to 8% at 14:06 UTC; "
        "card authorisations are failing for roughly one order in twelve.",
        "category": "process",
        "stakes": "critical",
        "confidence": 0.95,
    },
    {
        "key": "commander",
        "decision": "Assign Priya as incident commander and run the response in #inc-checkout-0612",
        "category": "process",
        "stakes": "medium",
        "confidence": 0.9,
        "depends_on": ["sev1"],
    },
    {
        "key": "freeze",
        "decision": "Freeze all deploys to the checkout cluster until the incident is resolved",
        "category": "process",
        "stakes": "high",
        "confidence": 0.9,
        "depends_on": ["sev1"],
    },
    {
        "key": "rollback",
        "decision": "Roll back checkout-api from release 4.12.0 to 4.11.3",
        "context": "The error rate started rising four minutes after 4.12.0 finished deploying.",
        "category": "process",
        "stakes": "high",
        "confidence": 0.7,
        "depends_on": ["sev1"],
        "reasons": [
            {"type": "empirical", "text": "Errors began four minutes after the 4.12.0 deploy"}
        ],
    },
    {
        "key": "tax_off",
        "decision": "Disable the new_tax_engine feature flag for all merchants",
        "category": "process",
        "stakes": "high",
        "confidence": 0.6,
        "depends_on": ["sev1"],
    },
    {
        "key": "status_page",
        "decision": "Post an update on the public status page every 30 minutes until resolved",
        "category": "process",
        "stakes": "medium",
        "confidence": 0.9,
        "depends_on": ["commander"],
    },
    {
        "key": "scale_up",
        "decision": "Scale the checkout-api deployment from 12 to 24 pods",
        "category": "architecture",
        "stakes": "high",
        "confidence": 0.6,
        "depends_on": ["sev1"],
    },
    {
        "key": "partner_limit",
        "decision": "Rate-limit the partner bulk-order API to 50 requests per second per partner",
        "context": "Two partners were replaying a day of failed orders in a tight loop.",
        "category": "integration",
        "stakes": "high",
        "confidence": 0.8,
        "depends_on": ["sev1"],
    },
    {
        "review": "rollback",
        "outcome": "failure",
        "result": "Errors persisted at 7% on 4.11.3; the release was not the cause",
        "lessons": "Check saturation dashboards before assuming the last deploy",
    },
    {
        "key": "pin",
        "decision": "Keep release 4.11.3 pinned in production until the 4.12.1 hotfix passes "
        "load tests",
        "category": "process",
        "stakes": "medium",
        "confidence": 0.6,
        "depends_on": ["rollback"],
    },
    {
        "key": "root_cause",
        "decision": "Treat database connection pool exhaustion in checkout-api as the working "
        "root cause",
        "context": "Pool wait time p99 is 9 s and every pod shows 20 of 20 connections busy; "
        "the orders database itself is at 35% CPU.",
        "category": "architecture",
        "stakes": "high",
        "confidence": 0.75,
        "depends_on": ["sev1"],
        "reasons": [{"type": "empirical", "text": "All pods at 20/20 busy connections"}],
    },
    {
        "key": "pool60",
        "decision": "Raise the checkout-api database connection pool from 20 to 60 per pod",
        "category": "architecture",
        "stakes": "high",
        "confidence": 0.65,
        "caused_by": ["root_cause"],
    },
    {
        "key": "max_conn",
        "decision": "Raise max_connections on the orders database from 500 to 1500",
        "context": "24 pods with 60 connections each need 1440 connections.",
        "category": "architecture",
        "stakes": "high",
        "confidence": 0.6,
        "depends_on": ["pool60"],
    },
    {
        "key": "pool_alert",
        "decision": "Alert when checkout-api pool utilisation stays above 80% for five minutes",
        "category": "tooling",
        "stakes": "medium",
        "confidence": 0.9,
        "depends_on": ["pool60"],
    },
    {
        "key": "pool_dash",
        "decision": "Add per-pod connection pool panels to the checkout dashboard",
        "category": "tooling",
        "stakes": "low",
        "confidence": 0.9,
        "depends_on": ["pool60"],
    },
    {
        "key": "pool20_blocked",
        "decision": "Keep the checkout-api database connection pool at 20 per pod",
        "context": "The orders database cannot take 1440 connections without a pooler.",
        "category": "architecture",
        "stakes": "high",
        "confidence": 0.7,
        "blocked_by": "pool60",
    },
    {
        "key": "pooler",
        "decision": "Put PgBouncer in front of the orders database in transaction mode",
        "category": "architecture",
        "stakes": "high",
        "confidence": 0.75,
        "depends_on": ["root_cause"],
    },
    {
        "key": "pool20",
        "decision": "Keep the checkout-api database connection pool at 20 per pod and let "
        "PgBouncer multiplex the connections",
        "context": "The orders database cannot take 1440 connections without a pooler.",
        "category": "architecture",
        "stakes": "high",
        "confidence": 0.75,
        "supersedes": ["pool60"],
        "depends_on": ["pooler"],
    },
    {
        "key": "scale_down",
        "decision": "Scale checkout-api back to 12 pods",
        "context": "Twice the pods only doubled the connections waiting on the database.",
        "category": "architecture",
        "stakes": "medium",
        "confidence": 0.8,
        "supersedes": ["scale_up"],
    },
    {
        "key": "breaker",
        "decision": "Wrap the tax-service client in a circuit breaker with a 2-second timeout",
        "category": "architecture",
        "stakes": "high",
        "confidence": 0.8,
        "caused_by": ["root_cause"],
    },
    {
        "key": "retries",
        "decision": "Cap checkout-api retries to the tax service at two, with jittered backoff",
        "category": "architecture",
        "stakes": "medium",
        "confidence": 0.85,
        "refines": ["breaker"],
    },
    {
        "key": "mitigated",
        "decision": "Mark the incident mitigated after 30 minutes with the error rate below 0.5%",
        "category": "process",
        "stakes": "medium",
        "confidence": 0.9,
        "depends_on": ["pool20"],
    },
    {
        "key": "unfreeze",
        "decision": "Lift the deploy freeze on the checkout cluster now that the incident is "
        "mitigated",
        "category": "process",
        "stakes": "medium",
        "confidence": 0.85,
        "supersedes": ["freeze"],
        "depends_on": ["mitigated"],
    },
    {
        "key": "tax_partial",
        "decision": "Re-enable the new_tax_engine feature flag for 5% of merchants once the "
        "circuit breaker ships",
        "category": "process",
        "stakes": "medium",
        "confidence": 0.7,
        "supersedes": ["tax_off"],
        "depends_on": ["breaker"],
    },
    {
        "key": "postmortem",
        "decision": "Hold a blameless postmortem within five business days",
        "category": "process",
        "stakes": "medium",
        "confidence": 0.95,
        "depends_on": ["sev1"],
    },
    {
        "key": "pm_owner",
        "decision": "Give the postmortem write-up to the payments platform team",
        "category": "process",
        "stakes": "low",
        "confidence": 0.9,
        "depends_on": ["postmortem"],
    },
    {
        "key": "load_test",
        "decision": "Add a load test at twice Black Friday peak to the checkout release pipeline",
        "category": "tooling",
        "stakes": "high",
        "confidence": 0.85,
        "caused_by": ["root_cause"],
    },
    {
        "key": "worker_pool",
        "decision": "Move the partner bulk-order API to its own worker pool, separate from "
        "interactive checkout traffic",
        "category": "architecture",
        "stakes": "high",
        "confidence": 0.8,
        "caused_by": ["partner_limit"],
    },
    {
        "key": "db_page",
        "decision": "Page the database on-call when orders database connections exceed 80% of "
        "max_connections",
        "category": "tooling",
        "stakes": "medium",
        "confidence": 0.9,
        "depends_on": ["pooler"],
    },
    {
        "key": "deploy_days",
        "decision": "Deploy checkout-api only Monday to Thursday between 09:00 and 16:00 UTC",
        "category": "process",
        "stakes": "medium",
        "confidence": 0.8,
        "depends_on": ["postmortem"],
    },
    {
        "key": "fridays",
        "decision": "Allow checkout-api deploys on any weekday, Fridays included",
        "context": "Release managers asked for Friday slots during the holiday code freeze.",
        "category": "process",
        "stakes": "medium",
        "confidence": 0.5,
        "contradicts": ["deploy_days"],
    },
    {
        "key": "merchant_email",
        "decision": "Email affected merchants a summary with the incident timeline within 48 hours",
        "category": "process",
        "stakes": "medium",
        "confidence": 0.9,
        "depends_on": ["mitigated"],
    },
    {
        "key": "credits",
        "decision": "Credit merchants 10% of their monthly fee for checkout failures during the "
        "incident window",
        "category": "process",
        "stakes": "high",
        "confidence": 0.7,
        "depends_on": ["merchant_email"],
    },
    {
        "key": "credit_ledger",
        "decision": "Record the merchant credits in the billing ledger under incident code "
        "INC-0612",
        "category": "process",
        "stakes": "low",
        "confidence": 0.9,
        "depends_on": ["credits"],
    },
    {"review": "breaker", "outcome": "success", "result": "Tax timeouts no longer hold pool"},
]

WHY = (
    "Why did we put PgBouncer in front of the orders database?",
    {"pooler", "root_cause"},
)

READY = {("unblock", "pin")}

SUPERSEDED = {
    "pool60": "pool20",
    "scale_up": "scale_down",
    "freeze": "unfreeze",
    "tax_off": "tax_partial",
}
