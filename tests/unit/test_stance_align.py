"""The second reading of a pair (retrieval.stance_align) and the combined verdict (conflicts.judge).

The pairs here are written for these tests, in domains and phrasings the benchmark's pairs do
not use, so they check the rules rather than the benchmark's wording.
"""

from __future__ import annotations

import pytest

from retrieval.conflicts import judge
from retrieval.stance_align import align_conflict, clauses, refinement, subject_terms

CONTRADICTING = [
    # negation: the same words, one of them negated
    (
        "negation",
        "Cache API responses at the CDN edge.",
        "Do not cache API responses at the CDN edge.",
    ),
    (
        "negation",
        "Mobile clients pin the server's TLS certificate.",
        "Mobile clients should not pin the server's TLS certificate.",
    ),
    ("negation", "Encrypt nightly database dumps.", "Nightly database dumps are never encrypted."),
    # value: one subject, another value of the same kind
    ("value", "Keep audit logs for 1 year.", "Retain audit logs for 90 days."),
    ("value", "Rotate database credentials monthly.", "Rotate database credentials every 90 days."),
    ("value", "Cap upload size at 25 MB.", "Raise the upload size cap to 100 MB."),
    (
        "value",
        "Run the full regression suite on Tuesdays and Thursdays.",
        "Run the full regression suite every weekday.",
    ),
    (
        "value",
        "Open the new office in Lisbon and Porto on the same day.",
        "Open the new office in Lisbon first and in Porto three months later.",
    ),
    # choice: the same sentence with another name in it
    (
        "choice",
        "Host the public status page on Statuspage.",
        "Host the public status page on Instatus.",
    ),
    ("choice", "Serve feature flags from LaunchDarkly.", "Serve feature flags from Unleash."),
    # rejection: one explicitly rejects what the other adopts
    (
        "rejection",
        "Bundle the web app with webpack.",
        "Bundle the web app with Vite instead of webpack.",
    ),
    (
        "rejection",
        "Search is powered by Elasticsearch.",
        "Move search from Elasticsearch to Typesense.",
    ),
    (
        "rejection",
        "Every team deploys with Spinnaker.",
        "The search team deploys with Argo CD and manual approval gates instead of Spinnaker.",
    ),
]

COMPATIBLE = [
    # the same tool for another purpose, another subject, another environment or region
    ("Use Sentry for frontend error tracking.", "Use Sentry for backend error tracking."),
    ("Keep audit logs for 1 year.", "Keep debug logs for 7 days."),
    ("Staging databases run on db.t3.medium.", "Production databases run on db.r6g.xlarge."),
    ("EU customer data stays in Frankfurt.", "US customer data stays in Virginia."),
    # refinement and restatement
    ("Run CI on GitHub Actions.", "Run CI on GitHub Actions with self-hosted ARM runners."),
    ("Never deploy without a green build.", "Deploy only with a green build."),
    ("Deliver alerts through PagerDuty.", "Alerts are delivered through PagerDuty."),
    # a pilot commits to nothing
    ("Use Node for the build scripts.", "Pilot Bun for the build scripts."),
    # unrelated decisions that share a word or two
    ("Write the billing service in Go.", "Write the onboarding guide in Markdown."),
    ("Use Terraform for AWS infrastructure.", "Use Pulumi for GCP infrastructure."),
    # numbers that label rather than set a value
    ("Migrate batch 3 of the ledger to Postgres.", "Migrate batch 4 of the ledger to Postgres."),
    (
        "Decision 5 from client 2 on the mobile release train (cedar 5)",
        "Decision 9 from client 2 on the mobile release train (cedar 9)",
    ),
    # permitting one thing does not contradict requiring another
    ("Require MFA for all partner admin accounts.", "Allow hardware keys as the second factor."),
    # a rejection qualified by where ("in Git") says nothing of another place
    ("Store API tokens in Vault.", "Never store API tokens in Git."),
    # one name spelt two ways
    ("Sign webhooks with HMAC-SHA256.", "Sign webhooks with HMAC SHA-256."),
    (
        "Send push notifications through Firebase Cloud Messaging.",
        "Send Android push notifications through FCM.",
    ),
]


@pytest.mark.parametrize(("kind", "a", "b"), CONTRADICTING)
def test_contradictions_are_found_both_ways(kind: str, a: str, b: str) -> None:
    verdicts = [judge(b, a), judge(a, b)]
    assert all(v is not None for v in verdicts), (a, b, verdicts)
    worded = align_conflict(b, a)
    if worded is not None:  # found by the words (else by the stance reading)
        assert worded[0] == kind, worded


@pytest.mark.parametrize(("a", "b"), COMPATIBLE)
def test_compatible_pairs_pass_both_ways(a: str, b: str) -> None:
    assert judge(b, a) is None, judge(b, a)
    assert judge(a, b) is None, judge(a, b)


def test_double_negation_is_positive() -> None:
    (clause,) = clauses("We never ship a breaking change without a major version bump")
    assert not clause.negated
    (clause,) = clauses("We never ship a breaking change")
    assert clause.negated


def test_context_free_and_deterministic() -> None:
    a, b = "Keep audit logs for 1 year.", "Retain audit logs for 90 days."
    first = align_conflict(b, a)
    assert all(align_conflict(b, a) == first for _ in range(3))
    assert subject_terms(a) == subject_terms(a.upper().lower().capitalize())


def test_refinement_is_one_statement_adding_to_the_other() -> None:
    assert refinement(
        "Paginate list endpoints with cursors.", "Paginate list endpoints with opaque cursors."
    )
    assert not refinement(
        "Paginate list endpoints with cursors.", "Paginate list endpoints with offsets."
    )


@pytest.mark.parametrize(
    "text",
    ["", "   ", "\u0000\u0007", "!!!", "no", "x" * 5000, "Use " + "Kafka, " * 300, "1.2.3.4.5"],
)
def test_hostile_text_never_raises(text: str) -> None:
    align_conflict(text, "Use Kafka for payment events.")
    align_conflict("Use Kafka for payment events.", text)
    judge(text, text)
