// decigraph explorer, right column: the selected node: its fields, supersession, reviews,
// guardrail verdict (re-checked now), contradictions and its history (history.js).
"use strict";

(function () {
  const DG = window.DG;
  const { $, el } = DG;
  let panelRequest = 0;

  function field(label, value) {
    if (value === undefined || value === null || value === "" || (Array.isArray(value) && !value.length)) {
      return null;
    }
    const shown = Array.isArray(value) ? value.join(", ") : String(value);
    return [el("dt", {}, label), el("dd", { dataset: { field: label } }, shown)];
  }

  DG.section = function section(title, attrs, ...children) {
    return el("section", { class: "panel-section", ...(attrs || {}) }, el("h3", {}, title), ...children);
  };
  const section = DG.section;

  // A decision id as a link that selects it (and draws it when it is not on the canvas).
  DG.nodeLink = function nodeLink(id, text) {
    return el(
      "button",
      {
        type: "button",
        class: "link",
        dataset: { id },
        onclick: () => (DG.state.cards.has(id) ? DG.select(id) : DG.explore(id)),
      },
      text || DG.shortText(DG.nameOf(id), 80),
    );
  };

  function guardrailAction(d, contradicted) {
    // checkGuardrails takes the decision's own fields (its params model rejects others).
    const action = { description: d.decision, tags: d.tags || [], contradicts: contradicted };
    for (const key of ["category", "stakes", "confidence", "context", "project"]) {
      if (d[key] !== undefined && d[key] !== null) action[key] = d[key];
    }
    if (d.reasons) action.reasons = d.reasons;
    return action;
  }

  function guardrailView(verdict) {
    const status = verdict.allowed ? "allowed" : "blocked";
    const findings = [
      ...verdict.violations.map((f) => ({ ...f, kind: "block", label: "Violation" })),
      ...verdict.warnings.map((f) => ({ ...f, kind: "warn", label: "Warning" })),
    ];
    const count = verdict.evaluated === 1 ? "1 guardrail" : `${verdict.evaluated} guardrails`;
    return [
      el(
        "p",
        { id: "guardrail-status", class: "verdict " + status, dataset: { status } },
        verdict.allowed ? "Allowed" : "Blocked",
        el("span", { class: "muted" }, ` · ${count} re-checked now`),
      ),
      findings.length
        ? el(
            "ul",
            { class: "findings" },
            findings.map((f) =>
              el(
                "li",
                { class: "finding " + f.kind, dataset: { guardrail: f.guardrailId } },
                el("strong", {}, `${f.label} · ${f.name || f.guardrailId}`),
                el("div", {}, f.message),
                f.suggestion ? el("div", { class: "muted" }, f.suggestion) : null,
              ),
            ),
          )
        : el("p", { class: "muted" }, "No violations or warnings."),
    ];
  }

  function contradictionView(id, found) {
    const mine = found.filter((c) => c.a === id || c.b === id);
    if (!mine.length) return el("p", { class: "muted", id: "contradictions-empty" }, "None involve this node.");
    return el(
      "ul",
      { id: "contradictions", class: "contradictions" },
      mine.map((c) => {
        const other = c.a === id ? c.b : c.a;
        const summary = c.a === id ? c.bSummary : c.aSummary;
        return el(
          "li",
          { dataset: { id: other } },
          DG.nodeLink(other, summary),
          el("div", { class: "muted" }, `${other} · salience at stake ${c.salienceAtStake.toFixed(2)}`),
        );
      }),
    );
  }

  // Supersession both ways, from getDecision's derived state.
  function lineageView(d) {
    const by = d.supersededBy || [];
    const over = d.supersedes || [];
    if (!by.length && !over.length) return null;
    const row = (label, ids, key) =>
      ids.length
        ? el(
            "p",
            { id: key, class: "lineage" },
            el("span", { class: "muted" }, label + " "),
            ids.map((id, i) => [i ? ", " : "", DG.nodeLink(id)]),
          )
        : null;
    return section("Supersession", {}, row("Superseded by", by, "superseded-by"), row("Supersedes", over, "supersedes"));
  }

  function reviewsView(d) {
    const reviews = d.reviews || [];
    if (!reviews.length) return null;
    return section(
      "Reviews",
      {},
      el(
        "ol",
        { id: "reviews", class: "reviews" },
        reviews.map((r) =>
          el(
            "li",
            { class: "review outcome-" + r.outcome, dataset: { outcome: r.outcome } },
            el(
              "div",
              { class: "review-head" },
              el("span", { class: "badge outcome-" + r.outcome }, r.outcome),
              el("span", { class: "muted" }, [DG.formatTime(r.reviewedAt), r.reviewedBy ? ` · ${r.reviewedBy}` : ""]),
            ),
            r.actualResult ? el("p", {}, el("span", { class: "muted" }, "Result: "), r.actualResult) : null,
            r.lessons ? el("p", { class: "lessons" }, el("span", { class: "muted" }, "Lessons: "), r.lessons) : null,
            r.notes ? el("p", { class: "muted" }, r.notes) : null,
          ),
        ),
      ),
    );
  }

  function missingView(nodeId) {
    const where = DG.past() ? `as of seq ${DG.state.asOf.seq}` : "now";
    return [
      el("div", { class: "panel-head" }, el("code", { class: "node-id" }, nodeId)),
      el("p", { id: "panel-missing", class: "muted" }, `This node is not in the graph ${where}.`),
    ];
  }

  DG.select = async function select(nodeId) {
    DG.state.selectedId = nodeId;
    const request = ++panelRequest;
    DG.markSelected(nodeId);
    const panel = $("panel");
    panel.dataset.state = "loading";
    panel.dataset.id = nodeId;
    // The history does not depend on the timeline: it is fetched beside the rest.
    const history = DG.fetchHistory(nodeId);
    try {
      const got = await DG.rpc("getDecision", DG.timed({ id: nodeId }));
      if (request !== panelRequest) return;
      DG.checkTimed(got, true);
      if (!got.found) {
        panel.replaceChildren(...missingView(nodeId), DG.historySection(nodeId, await history));
        panel.dataset.state = "ready";
        return;
      }
      const d = got.decision;
      const neighbours = await DG.rpc(
        "getNeighbors",
        DG.timed({ nodeId, direction: "outgoing", edgeType: "contradicts", limit: 100 }),
      );
      const contradicted = neighbours.neighbors.map((n) => n.node.id);
      const isDecision = (d.kind || "decision") === "decision";
      // Guardrails judge now: in the past the verdict would mix today's rules with old data.
      const checkNow = isDecision && !DG.past();
      const [verdict, contradictions, events] = await Promise.all([
        checkNow ? DG.rpc("checkGuardrails", { action: guardrailAction(d, contradicted) }) : null,
        DG.rpc("findContradictions", DG.timed({ status: "all", limit: 500 })),
        history,
      ]);
      if (request !== panelRequest) return; // the user clicked elsewhere meanwhile
      // The graph's card knows the salience; the decision knows the derived lifecycle.
      const card = DG.state.cards.get(nodeId) || {};
      const lifecycle = d.lifecycle || card.lifecycle;
      const project = d.project || (d.project_context && d.project_context.project);
      const parts = [
        el(
          "div",
          { class: "panel-head" },
          el("span", { class: "badge kind-" + (d.kind || "decision") }, d.kind || "decision"),
          lifecycle ? el("span", { id: "panel-lifecycle", class: "badge lifecycle-" + lifecycle }, lifecycle) : null,
          el("code", { class: "node-id" }, d.id),
          el(
            "button",
            { type: "button", class: "ghost small", onclick: () => DG.explore(d.id), title: "Centre the graph here" },
            "Centre graph",
          ),
        ),
        el("h2", { id: "panel-text", class: "decision-text" }, d.decision),
        DG.past() ? el("p", { class: "panel-past" }, `As it stood at seq ${DG.state.asOf.seq}`) : null,
        el(
          "dl",
          { class: "facts" },
          field("project", project),
          field("status", d.status),
          field("confidence", d.confidence === undefined ? null : DG.percent(d.confidence)),
          field("category", d.category),
          field("stakes", d.stakes),
          field("outcome", d.outcome),
          field("salience", card.salience === undefined ? null : card.salience.toFixed(2)),
          field("recorded by", d.recordedBy),
          field("date", d.date ? DG.formatTime(d.date) : null),
          field("tags", d.tags),
        ),
        d.context ? section("Context", {}, el("p", {}, d.context)) : null,
        d.reasons && d.reasons.length
          ? section("Reasons", {}, el("ul", {}, d.reasons.map((r) => el("li", {}, `${r.type}: ${r.text}`))))
          : null,
        lineageView(d),
        reviewsView(d),
        section(
          "Guardrails",
          {},
          verdict
            ? guardrailView(verdict)
            : el(
                "p",
                { class: "muted" },
                isDecision ? "Re-checked against the guardrails only when viewing now." : "Guardrails apply to decisions only.",
              ),
        ),
        section("Contradictions", {}, contradictionView(nodeId, contradictions.contradictions)),
        DG.historySection(nodeId, events),
      ];
      panel.replaceChildren(...parts.filter(Boolean)); // replaceChildren would print "null"
      panel.dataset.state = "ready";
    } catch (err) {
      if (request !== panelRequest) return;
      panel.dataset.state = "error";
      panel.replaceChildren(el("p", { class: "muted" }, "Could not load this node."));
      DG.showError(err.message);
    }
  };
})();
