// decigraph explorer: a decision's history (cstp.getDecisionHistory): every event that
// touched it, with before/after values, links, reviews and supersession, newest first; each
// event can set the timeline to the moment it happened.
"use strict";

(function () {
  const DG = window.DG;
  const { el } = DG;
  // Bookkeeping a reader does not need in a "recorded" event's field list.
  const RECORD_NOISE = new Set(["version", "created_at", "entities", "kind", "recorded_by", "text", "updated_at", "updated_by"]);
  let showDerived = false; // links retrieval derived on write: many, rarely interesting

  // Resolves, never rejects: {answer} or {error}.
  DG.fetchHistory = (id) =>
    DG.rpc("getDecisionHistory", { id }).then(
      (answer) => {
        DG.noteEvents(answer.events);
        return { answer };
      },
      (error) => ({ error }),
    );

  function changesTable(rows) {
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
            el("th", { scope: "row" }, name.replace(/_/g, " ")),
            el("td", { class: "before" }, DG.formatValue(change && change.before)),
            el("td", { class: "after" }, DG.formatValue(change && change.after)),
          ),
        ),
      ),
    );
  }

  function changesView(e) {
    let rows = Object.entries(e.changes || {});
    if (e.review) rows = rows.filter(([name]) => !(name in e.review)); // said by the review block
    if (e.op !== "record" || e.action !== "recorded") return changesTable(rows);
    // A record's "changes" are its first values: folded, without the bookkeeping.
    rows = rows.filter(([name]) => !RECORD_NOISE.has(name));
    if (!rows.length) return null;
    return el("details", { class: "initial" }, el("summary", {}, `initial values (${rows.length})`), changesTable(rows));
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
      edge.origin === "auto" ? el("span", { class: "muted" }, " (derived)") : null,
    );
  }

  function reviewView(review) {
    if (!review) return null;
    const result = review.actualResult || review.actual_result;
    return el(
      "div",
      { class: "history-review" },
      review.outcome ? el("span", { class: "badge outcome-" + review.outcome }, review.outcome) : null,
      result ? el("p", {}, el("span", { class: "muted" }, "Result: "), result) : null,
      review.lessons ? el("p", { class: "lessons" }, el("span", { class: "muted" }, "Lessons: "), review.lessons) : null,
    );
  }

  function eventView(e, selfId) {
    const future = DG.past() && e.seq > DG.state.asOf.seq;
    const derived = Boolean(e.edge && e.edge.origin === "auto");
    return el(
      "li",
      {
        class: "history-event action-" + e.action + (future ? " future" : "") + (derived ? " derived" : ""),
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
      changesView(e),
      edgeView(e.edge, selfId),
      reviewView(e.review),
      e.note ? el("p", { class: "muted" }, e.note) : null,
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
      return DG.section("History", attrs, DG.note(text, unavailable ? "unavailable" : "failed"));
    }
    const answer = result.answer;
    const events = [...(answer.events || [])].sort((a, b) => b.seq - a.seq); // newest first
    const derivedCount = events.filter((e) => e.edge && e.edge.origin === "auto").length;
    const list = el("ol", { id: "history-events", class: "history" }, events.map((e) => eventView(e, id)));
    list.classList.toggle("show-derived", showDerived);
    const toggle = derivedCount
      ? el(
          "label",
          { class: "history-toggle muted" },
          el("input", {
            id: "history-derived",
            type: "checkbox",
            checked: showDerived,
            onchange: (event) => {
              showDerived = event.target.checked;
              list.classList.toggle("show-derived", showDerived);
            },
          }),
          ` show ${derivedCount} derived link${derivedCount === 1 ? "" : "s"}`,
        )
      : null;
    // Supersession as the log tells it, for a node that no longer exists (forgotten).
    const superseded = events.filter((e) => e.action === "superseded" && e.edge).map((e) => e.edge.source);
    return DG.section(
      "History",
      attrs,
      answer.exists === false ? DG.note("This node has been forgotten; the log keeps its history.", "gone") : null,
      superseded.length && answer.exists === false
        ? el("p", { class: "lineage" }, el("span", { class: "muted" }, "Superseded by "), superseded.map((s) => DG.nodeLink(s)))
        : null,
      toggle,
      events.length ? list : DG.note("No events."),
    );
  };
})();
