"""The judge's vocabulary, without torch: its classes and the kinds of contradiction it reads.

The network (:mod:`.model`), the training script and the labelled data's checks
(``bench/judge_common.py``) all read these, so a label or kind is named once.
"""

from __future__ import annotations

#: The judge's classes, in logit order.
LABELS = ("contradicts", "compatible", "unrelated")
#: What kind of contradiction it reads (a second head, trained on contradicting pairs only):
#: it words the one-line reason an agent is shown. Also the data's contradicting phenomena.
KINDS = (
    "substitution",
    "negation",
    "value",
    "paraphrased_role",
    "antonym",
    "implied_alternative",
    "exception",
    "reversal",
    "scope_variant",
    "subordinate",
)
