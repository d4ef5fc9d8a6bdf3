"""The statement index: what every decision's statement chooses or rejects, and for what.

Contradiction candidates must not depend on a decision's context (a long context dilutes the
embedding of the stored text), so the detector looks decisions up by the parts of their
*statement* that a contradiction has to share (:mod:`.stance`, :mod:`.stance_compare`):

* ``a:<option>`` / ``r:<option>``: the statement adopts (or allows, requires, makes optional)
  / rejects the option, with ``|<purpose>`` variants for the same option for one purpose;
* ``p:<purpose>``: the statement adopts a named option for this purpose (rival choices);
* ``t:<word>``: a content word of the statement (:func:`.stance_align.subject_terms`), for
  the second reading (:mod:`.stance_align`): the same words with a negation, another value or
  another name.

Like the entity index it is derived from node attributes only (the statement and its time
key), so rebuilding it from the graph gives the state that incremental updates reach.
"""

from __future__ import annotations

from collections.abc import Callable

from graph.enums import NodeKind
from graph.model import Node
from graph.store import DecisionStore

from .stance import Claim, Stance, parse
from .stance_align import subject_terms
from .stance_compare import POSITIVE, purpose_key, verb_nouns
from .stance_words import REJECT, TRIAL
from .structures import EntityIndex, TimeKey


def _option_keys(claim: Claim) -> tuple[str, str]:
    side = "r" if claim.mode == REJECT else "a"
    option = claim.option.key
    return f"{side}:{option}", f"{side}:{option}|{purpose_key(claim.purpose)}"


def statement_keys(stance: Stance) -> list[str]:
    """The index keys of a stored statement."""
    keys: set[str] = {f"t:{term}" for term in subject_terms(stance.text)}
    for claim in stance.claims:
        if claim.mode == TRIAL:
            continue
        keys.update(_option_keys(claim))
        if claim.signature:
            keys.add(_signature_key(claim))
        if claim.mode in POSITIVE and claim.purpose.stated and not claim.option.action:
            keys.add(f"p:{purpose_key(claim.purpose)}")
            if claim.purpose.universal is not None:
                keys.add(f"u:{claim.purpose.universal}")  # a rule for every <head>
            else:
                keys.update(f"m:{term}" for term in _member_terms(claim))
    return sorted(keys)


def probe_keys(stance: Stance) -> list[str]:
    """The keys to look up for a new statement, most specific first (ties: as written)."""
    exact: list[str] = []
    broad: list[str] = []
    for claim in stance.claims:
        if claim.mode == TRIAL:
            continue
        option, purpose = claim.option.key, purpose_key(claim.purpose)
        if claim.signature:
            exact.append(_signature_key(claim))  # the same policy with other values
        if claim.mode == REJECT:  # who adopts it, for this purpose first, then for any
            exact.append(f"a:{option}|{purpose}")
            broad.append(f"a:{option}")
            continue
        exact += [f"r:{option}", f"a:{option}|{purpose}"]  # its rejections; same-policy rivals
        if claim.mode in POSITIVE and claim.purpose.stated and not claim.option.action:
            exact.append(f"p:{purpose}")  # other choices for the same purpose
            broad += [f"p:{variant}" for variant in _purpose_variants(claim)]
            if claim.purpose.universal is not None:  # members of a quantified purpose
                broad.append(f"m:{claim.purpose.universal}")
            else:
                broad += [f"u:{term}" for term in sorted(_member_terms(claim))]
    return list(dict.fromkeys(exact + broad))


def _member_terms(claim: Claim) -> frozenset[str]:
    """Words a quantified purpose's head may be among (see :func:`.stance_compare.within`)."""
    verb = claim.purpose.verb
    return claim.purpose.terms | (verb_nouns(verb) if verb is not None else frozenset())


def _signature_key(claim: Claim) -> str:
    return "v:" + " ".join(sorted(claim.signature))


def _purpose_variants(claim: Claim) -> list[str]:
    """Purpose keys :func:`same_purpose` may equate with this claim's: a role word in one
    option's name ("Django ORM") or a noun of the verb ("bundler") on one side only."""
    base = set(purpose_key(claim.purpose).split())
    variants = [base - {word} for word in sorted(base)]
    extra = set(claim.option.key.split())
    if claim.purpose.verb is not None:
        extra |= verb_nouns(claim.purpose.verb)
    variants += [base | {word} for word in sorted(extra - base)]
    return [" ".join(sorted(v)) for v in variants]


class StatementIndex:
    """Statement keys -> decisions, latest first (an :class:`EntityIndex` over other keys)."""

    def __init__(self) -> None:
        self._postings = EntityIndex()

    def __len__(self) -> int:
        return len(self._postings)

    def ids(self) -> set[str]:
        return self._postings.ids()

    def keys_of(self, node_id: str) -> tuple[str, ...]:
        return self._postings.keys_of(node_id)

    def put(self, node: Node, when: TimeKey) -> None:
        """Index ``node``'s statement (only decisions; anything else is removed)."""
        if node.kind is not NodeKind.DECISION:
            self._postings.remove(node.id)
            return
        self._postings.put(node.id, statement_keys(parse(node.text)), when)

    def remove(self, node_id: str) -> None:
        self._postings.remove(node_id)

    def sharing_words(
        self,
        text: str,
        accept: Callable[[str], bool],
        terms: int,
        per_term: int,
        scan: int,
        limit: int,
    ) -> list[str]:
        """Up to ``limit`` decisions sharing the most content words with ``text``.

        The ``terms`` rarest of its words (fewest decisions, then alphabetical) are looked up,
        each giving its ``per_term`` latest accepted decisions among ``scan``; the decisions
        found are ordered by how many of those words they share, then by id. Bounded by
        ``terms * per_term`` lookups whatever the store's size.
        """
        words = sorted(subject_terms(text), key=lambda t: (self._postings.doc_freq(f"t:{t}"), t))
        shared: dict[str, int] = {}
        for word in words[:terms]:
            taken = 0
            for node_id in self._postings.latest(f"t:{word}", scan):
                if taken == per_term:
                    break
                if node_id in shared:
                    shared[node_id] += 1
                    taken += 1
                elif accept(node_id):
                    shared[node_id] = 1
                    taken += 1
        ranked = sorted(shared, key=lambda n: (-shared[n], n))
        return [n for n in ranked if shared[n] >= 2 or len(words) < 2][:limit]

    def candidates(
        self,
        stance: Stance,
        accept: Callable[[str], bool],
        per_key: int,
        limit: int,
        scan: int,
    ) -> list[str]:
        """Up to ``limit`` decisions sharing a probe key with ``stance``.

        Each key gives its ``per_key`` latest decisions that ``accept`` passes, looking at no
        more than ``scan`` of them; keys are read most specific first. Deterministic: the
        order is the keys' order, then time (latest first).
        """
        out: dict[str, None] = {}
        for key in probe_keys(stance):
            taken = 0
            for node_id in self._postings.latest(key, scan):
                if taken == per_key or len(out) == limit:
                    break
                if node_id in out or not accept(node_id):
                    continue
                out[node_id] = None
                taken += 1
            if len(out) == limit:
                break
        return list(out)

    @classmethod
    def of(cls, store: DecisionStore, when: Callable[[Node], TimeKey]) -> StatementIndex:
        """The index of every decision in ``store`` (when a snapshot predates this index)."""
        index = cls()
        for node_id in sorted(store.graph.nodes):
            node = store.get(node_id)
            if node.kind is NodeKind.DECISION:
                index.put(node, when(node))
        return index
