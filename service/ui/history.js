// decigraph explorer: a decision's history (cstp.getDecisionHistory): every event that
// touched it, with before/after values, links, reviews and supersession; each event can set
// the timeline to the moment it happened.
"use strict";

(function () {
  const DG = window.DG;
  const { el } = DG;

  // Resolves, never rejects: {answer} or {error}.
  DG.fetchHistory = (id) =>
    DG.rpc("getDecisionHistory", { id }).then(
      (answer) => {
        DG.noteEvents(answer.events);
        return { answer };
      },
      (error) => ({ error }),
    );

  function changesView(changes) {
    const rows = Object.entries(changes || {});
    if (!rows.length) return null;
    return el(
      "table",
      { class: "changes" },
      el("thead", {}, el("tr", {}, el("th", {}, "field"), el("th", {}, "before"), el("th", {}, "after"))),
      el(
        "tbody",
        {},
        rows.map(([name, change]) =>
          el(
            "tr",
            { dataset: { change: name } },
            el("th", { scope: "row" }, name),
            el("td", { class: "before" }, DG.formatValue(change && change.before)),
            el("td", { class: "after" }, DG.formatValue(change && change.after)),
          ),
        ),
      ),
    );
  }

  function edgeView(edge, selfId) {
    if (!edge) return null;
    const end = (id) => (id === selfId ? el("span", { class: "muted" }, "this") : DG.nodeLink(id));
    return el(
      "p",
      { class: "history-edge" },
      end(edge.source),
      el("span", { class: "edge-type type-" + edge.type }, ` ${String(edge.type).replace(/_/g, " ")} `),
      end(edge.target),
    );
  }

  function reviewView(review) {
    if (!review) return null;
    const lessons = review.lessons;
    const result = review.actualResult || review.actual_result;
    return el(
      "div",
      { class: "history-review" },
      review.outcome ? el("span", { class: "badge outcome-" + review.outcome }, review.outcome) : null,
      result ? el("p", {}, el("span", { class: "muted" }, "Result: "), result) : null,
      lessons ? el("p", { class: "lessons" }, el("span", { class: "muted" }, "Lessons: "), lessons) : null,
    );
  }

  function eventView(e, selfId) {
    const future = DG.past() && e.seq > DG.state.asOf.seq;
    return el(
      "li",
      {
        class: "history-event action-" + e.action + (future ? " future" : ""),
        dataset: { seq: e.seq, op: e.op, action: e.action },
        title: future ? "After the moment the timeline shows" : null,
      },
      el(
        "div",
        { class: "history-head" },
        el("span", { class: "op op-" + e.op }, e.action),
        el("span", { class: "muted" }, `${DG.formatTime(e.ts)} · ${e.actor}`),
        el(
          "button",
          {
            type: "button",
            class: "seq-chip",
            title: `View the graph as of seq ${e.seq}`,
            dataset: { asof: e.seq },
            onclick: () => DG.emit("travel", e.seq),
          },
          `seq ${e.seq}`,
        ),
      ),
      changesView(e.changes),
      edgeView(e.edge, selfId),
      reviewView(e.review),
    );
  }

  DG.historySection = function historySection(id, result) {
    const attrs = { id: "history", dataset: { state: "ready" } };
    if (!result || result.error) {
      const err = result && result.error;
      const unavailable = err && err.unavailable;
      attrs.dataset.state = unavailable ? "unavailable" : "error";
      const text = unavailable
        ? "History is not available on this server (cstp.getDecisionHistory)."
        : `Could not load the history: ${err ? err.message : "no answer"}`;
      return DG.section("History", attrs, DG.note(text));
    }
    const answer = result.answer;
    const events = [...(answer.events || [])].sort((a, b) => b.seq - a.seq); // newest first
    // Supersession as the log tells it, for a node that no longer exists (forgotten).
    const superseded = events.filter((e) => e.action === "superseded" && e.edge).map((e) => e.edge.source);
    return DG.section(
      "History",
      attrs,
      answer.exists === false ? DG.note("This node has been forgotten; the log keeps its history.", "gone") : null,
      superseded.length && answer.exists === false
        ? el("p", { class: "lineage" }, el("span", { class: "muted" }, "Superseded by "), superseded.map((s) => DG.nodeLink(s)))
        : null,
      events.length
        ? el("ol", { id: "history-events", class: "history" }, events.map((e) => eventView(e, id)))
        : DG.note("No events."),
    );
  };
})();
