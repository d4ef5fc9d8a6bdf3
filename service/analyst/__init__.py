"""The notebook API: a data directory in-process, or a running server, as pandas DataFrames.

Both ways go through the same JSON-RPC methods agents call (in-process: the service's own
dispatcher, no HTTP), so a notebook sees exactly what an agent sees. Graph-wide analyses
(salience of every node, compaction tiers, calibration) run the domain functions on the graph
itself: the live graph in-process, or ``GET /graph/export`` from a server.

>>> from service.analyst import open_local, connect        # doctest: +SKIP
>>> dg = open_local("data/sample")                          # doctest: +SKIP
>>> dg.salience().head()                                     # doctest: +SKIP
>>> dg = connect("http://127.0.0.1:8100", token="...")      # doctest: +SKIP

``open_local`` opens the directory read-only when a server owns it (it then follows the
server's writes on :meth:`Analyst.refresh`), and read-only whenever asked; read-only views
index vectors in a private in-memory ChromaDB, never touching the owner's.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, Self

import networkx as nx
import pandas as pd

from graph.algorithms.compaction import compaction_plan
from graph.algorithms.salience import compute_salience
from graph.enums import EdgeType
from graph.lifecycle import node_state
from graph.timeutil import parse_ts, utc_now
from retrieval.embedder import Embedder
from service.client import AnalystError, InProcess, OverHttp, Transport, graph_from_node_link
from service.composition import Mode, open_app
from service.settings import Settings

from .history import AS_OF_METHODS, history_table

__all__ = ["Analyst", "AnalystError", "connect", "explain", "graph_from_node_link", "open_local"]


def open_local(
    data_dir: str | Path,
    *,
    read_only: bool | None = None,
    embedder: Embedder | None = None,
    settings: Settings | None = None,
) -> Analyst:
    """Open a data directory in this process.

    Parameters
    ----------
    data_dir : str or Path
        The store's directory.
    read_only : bool, optional
        ``None`` (default): open as the writer when the directory is free, read-only when a
        server holds it. ``True``: always read-only (nothing in the directory is written, not
        even snapshots on close). ``False``: the writer or an error.
    embedder : Embedder, optional
        Defaults to the bundled all-MiniLM-L6-v2 (loaded on the first query that embeds).
    settings : Settings, optional
        Other settings (guardrails, Chroma server); ``data_dir`` comes from the argument.
        Without them the collector is left alone (``gc_freeze=False``): freezing the heap
        suits a server, not the notebook or script that opened the store.
    """
    base = settings or Settings().model_copy(update={"gc_freeze": False})
    settings = base.model_copy(update={"data_dir": Path(data_dir)})
    if not (settings.data_dir / "events.jsonl").exists():
        raise FileNotFoundError(f"{settings.data_dir} holds no decigraph store (no events.jsonl)")
    mode: Mode = "read_only" if read_only else ("writer" if read_only is False else "auto")
    return Analyst(InProcess(open_app(settings, embedder, mode=mode)))


def connect(url: str, token: str | None = None, *, timeout: float = 60.0) -> Analyst:
    """A running server at ``url`` (e.g. ``http://127.0.0.1:8100``), with its bearer token."""
    analyst = Analyst(OverHttp(url, token, timeout))
    analyst.call("cstp.getStats")  # fail now, not at the first cell that needs the server
    return analyst


class Analyst:
    """Tables about one decision graph; build it with :func:`open_local` or :func:`connect`."""

    def __init__(self, transport: Transport, as_of: int | str | None = None) -> None:
        self.transport = transport
        self._graph: nx.MultiDiGraph[str] | None = None
        #: The point the graph-wide tables read (``None``: now); see :meth:`as_of`.
        self.point = as_of

    def __repr__(self) -> str:
        at = "" if self.point is None else f", as_of={self.point!r}"
        return f"Analyst({self.transport.description}{at})"

    def as_of(self, when: int | str | datetime) -> Analyst:
        """The same connection, with every graph-wide table (``decisions``, ``edges``,
        ``salience``, ``contradictions``...) computed on the graph as it stood after seq
        ``when``, or at an ISO-8601 time. Exact: the log replayed to that point."""
        point = when.isoformat() if isinstance(when, datetime) else when
        return Analyst(self.transport, as_of=point)

    def history(self, node_id: str) -> pd.DataFrame:
        """Every event that touched a decision (``cstp.getDecisionHistory``), oldest first:
        seq, time, actor, action, and what changed (``field: before -> after``)."""
        return history_table(self.transport.call("cstp.getDecisionHistory", {"id": node_id}))

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.transport.close()

    @property
    def read_only(self) -> bool:
        return self.transport.read_only

    def call(self, method: str, **params: Any) -> Any:
        """Any JSON-RPC method, e.g. ``call("cstp.getDecision", id="1a2b3c4d")``; a view
        :meth:`as_of` a point passes ``asOf`` to the methods that take it."""
        if self.point is not None and method in AS_OF_METHODS:
            params.setdefault("asOf", self.point)
        else:
            self._graph = None  # a call may write; re-read the graph next time
        return self.transport.call(method, params)

    def refresh(self) -> int:
        """Read-only views: apply the writer's new events (indexes follow); how many."""
        self._graph = None
        return self.transport.refresh()

    def graph(self) -> nx.MultiDiGraph[str]:
        """A copy of the whole graph (cached until the next call that may change it)."""
        if self._graph is None:
            self._graph = self.transport.graph(self.point)
        return self._graph

    # -- tables from the graph ---------------------------------------------------------------
    def decisions(self, include_memory: bool = False) -> pd.DataFrame:
        """One row per decision (and memory item, if asked): the fields analysts group by."""
        G = self.graph()
        rows = []
        for node_id in sorted(G.nodes):
            attrs = G.nodes[node_id]
            kind = attrs.get("kind", "decision")
            if kind != "decision" and not include_memory:
                continue
            state = node_state(G, node_id)  # the effective lifecycle, as every answer reports
            rows.append(
                {
                    "id": node_id,
                    "kind": kind,
                    "text": attrs["text"],
                    "project": attrs.get("project"),
                    "category": attrs.get("category"),
                    "stakes": attrs.get("stakes"),
                    "confidence": attrs.get("confidence"),
                    "lifecycle": state.lifecycle.value,
                    "status": state.status.value,
                    "outcome": attrs.get("outcome"),
                    "created_at": _ts(attrs.get("occurred_at") or attrs["created_at"]),
                    "reviewed_at": _ts(attrs.get("reviewed_at")),
                    "recorded_by": attrs.get("recorded_by"),
                }
            )
        return pd.DataFrame(rows, columns=_DECISION_COLUMNS)

    def edges(self, include_derived: bool = True) -> pd.DataFrame:
        """One row per stored edge (symmetric types appear once per direction, as stored)."""
        G = self.graph()
        rows = []
        for source, target, kind, attrs in sorted(G.edges(keys=True, data=True)):
            if not include_derived and attrs.get("origin") == "auto":
                continue
            rows.append(
                {
                    "source": source,
                    "target": target,
                    "type": kind,
                    "family": EdgeType(kind).family.value,
                    "origin": attrs.get("origin", "manual"),
                    "weight": attrs.get("weight", 1.0),
                    "created_at": _ts(attrs.get("created_at")),
                }
            )
        return pd.DataFrame(rows, columns=_EDGE_COLUMNS)

    def salience(self, top: int | None = None) -> pd.DataFrame:
        """Every decision's salience (0: nothing relies on it; see graph.algorithms.salience),
        most salient first, ties by id."""
        G = self.graph()
        scores = compute_salience(G)
        table = self.decisions()
        table.insert(1, "salience", table["id"].map(scores))
        table["dependents"] = table["id"].map(lambda n: _count_in(G, n, "depends_on"))
        table = table.sort_values(["salience", "id"], ascending=[False, True], kind="mergesort")
        table = table.reset_index(drop=True)
        table.insert(0, "rank", range(1, len(table) + 1))
        return table if top is None else table.head(top)

    def compaction(
        self, now: datetime | None = None, *, high_fraction: float = 0.2
    ) -> pd.DataFrame:
        """The compaction tier and action of every node, as of ``now`` (default: now)."""
        G = self.graph()
        plan = compaction_plan(
            G, compute_salience(G), now or utc_now(), high_fraction=high_fraction
        )
        return pd.DataFrame(
            [
                {
                    "id": e.node_id,
                    "kind": G.nodes[e.node_id].get("kind", "decision"),
                    "tier": e.tier,
                    "action": e.action,
                    "due": e.due,
                    "due_at": e.due_at,
                    "fold_into": e.fold_into,
                    "reason": e.reason,
                }
                for e in plan
            ]
        )

    def calibration(self, by: str | None = "category", bins: int = 5) -> pd.DataFrame:
        """Reviewed decisions' confidence against outcomes (success counts 1, partial 0.5).

        Returns one row per group (``by`` a column of :meth:`decisions`, or ``None`` for all)
        with the count, mean confidence, success rate, the gap between them and the Brier
        score; ``reliability(bins)`` gives the per-bin table for a reliability plot.
        """
        reviewed = self.reviewed()
        groups = [("all", reviewed)] if by is None else list(reviewed.groupby(by, sort=True))
        rows = []
        for name, part in groups:
            rows.append(
                {
                    "group": name,
                    "reviewed": len(part),
                    "mean_confidence": part["confidence"].mean(),
                    "success_rate": part["success"].mean(),
                    "overconfidence": part["confidence"].mean() - part["success"].mean(),
                    "brier": ((part["confidence"] - part["success"]) ** 2).mean(),
                }
            )
        return pd.DataFrame(rows)

    def reliability(self, bins: int = 5) -> pd.DataFrame:
        """Per confidence bin: mean confidence, observed success rate and count."""
        reviewed = self.reviewed()
        edges = [i / bins for i in range(bins + 1)]
        reviewed["bin"] = pd.cut(reviewed["confidence"], edges, include_lowest=True)
        table = reviewed.groupby("bin", observed=True).agg(
            mean_confidence=("confidence", "mean"),
            success_rate=("success", "mean"),
            count=("id", "size"),
        )
        return table.reset_index()

    def reviewed(self) -> pd.DataFrame:
        """Reviewed decisions with a confidence, and ``success`` (1, 0.5 partial, 0)."""
        table = self.decisions()
        table = table[table["outcome"].notna() & table["confidence"].notna()].copy()
        table["success"] = table["outcome"].map(_OUTCOME_SCORE).astype(float)
        return table

    def supersedes_chain(self, node_id: str) -> pd.DataFrame:
        """The decisions this one replaced and those that replaced it, oldest first."""
        G = self.graph()
        older = _walk(G, node_id, "supersedes", forward=True)
        newer = _walk(G, node_id, "supersedes", forward=False)
        chain = [*reversed(older), node_id, *newer]
        table = self.decisions(include_memory=True).set_index("id").loc[chain].reset_index()
        table.insert(
            1, "position", [*(-i for i in range(len(older), 0, -1)), 0, *range(1, len(newer) + 1)]
        )
        return table

    # -- tables from the service's methods ---------------------------------------------------
    def contradictions(self, include_inactive: bool = False) -> pd.DataFrame:
        """Contradicting pairs, most salience at stake first (``cstp.findContradictions``)."""
        status = "all" if include_inactive else "active"
        found = self.call("cstp.findContradictions", status=status, limit=500)["contradictions"]
        return pd.DataFrame(
            [
                {
                    "a": c["a"],
                    "b": c["b"],
                    "salience_at_stake": c["salienceAtStake"],
                    "a_salience": c["aSalience"],
                    "b_salience": c["bSalience"],
                    "a_summary": c["aSummary"],
                    "b_summary": c["bSummary"],
                    "origin": c["edge"]["origin"],
                }
                for c in found
            ],
            columns=_CONTRADICTION_COLUMNS,
        )

    def blocked(self) -> pd.DataFrame:
        """Every blocked active decision with its direct blockers (``cstp.getBlockedChain``)."""
        answer = self.call("cstp.getBlockedChain")
        rows = []
        for chain in answer["blocked"]:
            direct = [b for b in chain["blockers"] if b["depth"] == 1]
            rows.append(
                {
                    "id": chain["nodeId"],
                    "chain_length": len(chain["blockers"]),
                    "direct_blockers": [b["nodeId"] for b in direct],
                    "reasons": sorted({b["reason"] for b in direct}),
                    "via": sorted({b["viaType"] for b in direct}),
                }
            )
        return pd.DataFrame(
            rows, columns=["id", "chain_length", "direct_blockers", "reasons", "via"]
        )

    def blocked_chain(self, node_id: str) -> pd.DataFrame:
        """Everything holding ``node_id`` up, directly and transitively."""
        answer = self.call("cstp.getBlockedChain", nodeId=node_id)
        return pd.DataFrame(
            [
                {
                    "id": b["nodeId"],
                    "depth": b["depth"],
                    "reason": b["reason"],
                    "via": b["viaType"],
                    "path": " -> ".join(b["path"]),
                    "summary": b["summary"],
                }
                for b in answer["chain"]
            ],
            columns=["id", "depth", "reason", "via", "path", "summary"],
        )

    def ready(self, limit: int = 20, **params: Any) -> pd.DataFrame:
        """The ready queue (``cstp.ready``): what to review or resolve next, by priority."""
        answer = self.call("cstp.ready", limit=limit, **params)
        return pd.json_normalize(answer["actions"]) if answer["actions"] else pd.DataFrame()

    def lineage(self, node_id: str, direction: str = "ancestors", depth: int = 5) -> pd.DataFrame:
        """``cstp.getAncestors`` / ``getDescendants`` over every causal and supersession type."""
        method = "cstp.getAncestors" if direction == "ancestors" else "cstp.getDescendants"
        types = ["depends_on", "caused_by", "supersedes", "refines", "blocks"]
        answer = self.call(method, nodeId=node_id, edgeTypes=types, maxDepth=depth)
        return pd.DataFrame(
            [
                {
                    "id": n["id"],
                    "depth": n["depth"],
                    "edge": n["via"]["edgeType"],
                    "from": n["via"]["sourceId"],
                    "to": n["via"]["targetId"],
                    "kind": n["kind"],
                    "lifecycle": n["lifecycle"],
                    "summary": n["summary"],
                }
                for n in answer["nodes"]
            ],
            columns=["id", "depth", "edge", "from", "to", "kind", "lifecycle", "summary"],
        )

    def recall(self, query: str, limit: int = 10, intent: str | None = None) -> pd.DataFrame:
        """Hybrid recall (``cstp.recall``) with a readable explanation of every hit and its
        absolute relevance (0-1, comparable across queries)."""
        params: dict[str, Any] = {"query": query, "limit": limit, "explain": True}
        if intent is not None:
            params["intent"] = intent
        answer = self.call("cstp.recall", **params)
        table = pd.DataFrame(
            [
                {
                    "rank": rank,
                    "id": hit["id"],
                    "score": hit["score"],
                    "relevance": hit["relevance"],
                    "kind": hit["kind"],
                    "text": hit["text"],
                    "why": explain(hit["via"]),
                }
                for rank, hit in enumerate(answer["results"], start=1)
            ],
            columns=["rank", "id", "score", "relevance", "kind", "text", "why"],
        )
        table.attrs.update(intent=answer["intent"], preset=answer["preset"])
        return table

    def search(self, query: str, limit: int = 10, mode: str = "semantic") -> pd.DataFrame:
        """``cstp.queryDecisions`` (``semantic`` is plain vector search; also keyword, hybrid)."""
        answer = self.call("cstp.queryDecisions", query=query, limit=limit, retrievalMode=mode)
        return pd.DataFrame(
            [
                {"rank": rank, "id": d["id"], "score": d["score"], "text": d["title"]}
                for rank, d in enumerate(answer["decisions"], start=1)
            ],
            columns=["rank", "id", "score", "text"],
        )


def explain(via: Mapping[str, Any]) -> str:
    """One line from a recall hit's ``via``: the signals that found it, the edges that led there.

    The path reads in the order it was walked, from the anchor it started at; each arrow points
    the way the edge is stored, so ``a <-depends_on- b`` says "b depends_on a", reached from a.

    >>> explain({"signals": {"keyword": 0.5, "keywordRank": 3.0, "rrf": 0.03}, "anchor": True,
    ...          "path": [{"from": "bbbbbbbb", "edgeType": "caused_by", "to": "aaaaaaaa",
    ...                    "walked": "backward"}]})
    'keyword 0.50 (#3); anchor; reached aaaaaaaa <-caused_by- bbbbbbbb'
    """
    signals = via.get("signals") or {}
    parts = []
    for name in sorted(k for k in signals if not k.endswith("Rank") and k != "rrf"):
        rank = signals.get(f"{name}Rank")
        parts.append(f"{name} {signals[name]:.2f}" + (f" (#{int(rank)})" if rank else ""))
    if via.get("anchor"):
        parts.append("anchor")
    path = via.get("path") or []
    if path:
        first = path[0]
        line = first["to"] if first.get("walked") == "backward" else first["from"]
        for step in path:
            kind = step.get("edgeType")
            if step.get("walked") == "backward":
                line += f" <-{kind}- {step['from']}"
            else:
                line += f" -{kind}-> {step['to']}"
        parts.append(f"reached {line}")
    return "; ".join(parts) or "-"


@contextmanager
def opened(data_dir: str | Path, **kwargs: Any) -> Iterator[Analyst]:
    """``with opened(path) as dg:`` closes the store (and its indexes) at the end."""
    analyst = open_local(data_dir, **kwargs)
    try:
        yield analyst
    finally:
        analyst.close()


_DECISION_COLUMNS = [
    "id", "kind", "text", "project", "category", "stakes", "confidence", "lifecycle",
    "status", "outcome", "created_at", "reviewed_at", "recorded_by",
]  # fmt: skip
_EDGE_COLUMNS = ["source", "target", "type", "family", "origin", "weight", "created_at"]
_CONTRADICTION_COLUMNS = [
    "a", "b", "salience_at_stake", "a_salience", "b_salience", "a_summary", "b_summary", "origin",
]  # fmt: skip
_OUTCOME_SCORE = {"success": 1.0, "partial": 0.5, "failure": 0.0, "abandoned": 0.0}


def _ts(value: Any) -> pd.Timestamp | None:
    return None if value is None else pd.Timestamp(parse_ts(str(value)))


def _count_in(G: nx.MultiDiGraph[str], node_id: str, kind: str) -> int:
    return sum(1 for _, _, k in G.in_edges(node_id, keys=True) if k == kind)


def _walk(G: nx.MultiDiGraph[str], start: str, kind: str, forward: bool) -> list[str]:
    """Follow ``kind`` edges one way from ``start`` (smallest id first at forks)."""
    seen, current = {start}, start
    out: list[str] = []
    while True:
        if forward:
            step = sorted(v for _, v, k in G.out_edges(current, keys=True) if k == kind)
        else:
            step = sorted(u for u, _, k in G.in_edges(current, keys=True) if k == kind)
        step = [n for n in step if n not in seen]
        if not step:
            return out
        current = step[0]
        seen.add(current)
        out.append(current)
