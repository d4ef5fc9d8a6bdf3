// decigraph explorer, left column: the overview (most salient decisions, open
// contradictions, the ready queue, recent changes) and the search results.
"use strict";

(function () {
  const DG = window.DG;
  const { $, el, shortText } = DG;
  const SHOWN = 6; // entries per overview list
  const QUIET_LIFECYCLES = new Set(["accepted", "active"]); // the usual state: no badge
  const EVENTS_SHOWN = 10;
  let generation = 0; // a newer load wins over a slower older one

  // -- One overview section ----------------------------------------------------------------
  function sectionList(id) {
    return $(id).querySelector(".ov-list");
  }

  function setSection(id, state, items, emptyText) {
    const box = $(id);
    box.dataset.state = state;
    for (const old of box.querySelectorAll(":scope > .note")) old.remove();
    const list = sectionList(id);
    list.replaceChildren(...(items || []));
    if (state === "ready" && !(items || []).length) box.append(DG.note(emptyText, "ov-empty"));
    DG.emit("listed");
  }

  function sectionFailed(id, err, method) {
    const box = $(id);
    box.dataset.state = err.unavailable ? "unavailable" : "error";
    sectionList(id).replaceChildren();
    for (const old of box.querySelectorAll(":scope > .note")) old.remove();
    const text = err.unavailable
      ? `Not available on this server (cstp.${method}).`
      : `Could not load: ${err.message}`;
    box.append(DG.note(text, err.unavailable ? "unavailable" : "failed"));
  }

  // An entry that opens a decision's neighbourhood when clicked.
  function entry(id, props, ...children) {
    return el(
      "li",
      { dataset: { id } },
      el("button", { type: "button", class: "ov-item", onclick: () => DG.emit("open", id), ...props }, children),
    );
  }

  function salienceBar(value) {
    const bar = el("span", { class: "bar" }, el("span", { class: "bar-fill" }));
    bar.firstChild.style.width = Math.round(Math.max(0.04, Math.min(1, value)) * 100) + "%";
    return bar;
  }

  // -- The four lists ------------------------------------------------------------------------
  async function loadSalient(gen) {
    const id = "ov-salient";
    try {
      const answer = await DG.rpc("getHighSalience", DG.timed({ limit: DG.state.project ? 200 : SHOWN }));
      if (gen !== generation) return;
      DG.checkTimed(answer);
      for (const d of answer.decisions) DG.noteName(d.id, d.summary);
      const top = answer.decisions.filter((d) => DG.inProject(d.id)).slice(0, SHOWN);
      const max = Math.max(1e-9, ...top.map((d) => d.salience || 0));
      setSection(
        id,
        "ready",
        top.map((d) =>
          entry(
            d.id,
            { title: d.summary },
            el(
              "div",
              { class: "ov-line" },
              el("span", { class: "ov-text one-line" }, d.summary),
              d.lifecycle && !QUIET_LIFECYCLES.has(d.lifecycle)
                ? el("span", { class: "badge lifecycle-" + d.lifecycle }, d.lifecycle)
                : null,
              el("span", { class: "score" }, (d.salience || 0).toFixed(2)),
            ),
            salienceBar((d.salience || 0) / max),
          ),
        ),
        "No decisions yet.",
      );
    } catch (err) {
      if (gen === generation) sectionFailed(id, err, "getHighSalience");
    }
  }

  const side = (id, summary) =>
    el(
      "button",
      { type: "button", class: "ov-item side", title: summary, dataset: { id }, onclick: () => DG.emit("open", id) },
      shortText(summary, 70),
    );

  async function loadContradictions(gen) {
    const id = "ov-contradictions";
    try {
      const answer = await DG.rpc("findContradictions", DG.timed({ limit: 100 }));
      if (gen !== generation) return;
      DG.checkTimed(answer);
      const open = answer.contradictions.filter((c) => DG.inProject(c.a) || DG.inProject(c.b)).slice(0, SHOWN);
      setSection(
        id,
        "ready",
        open.map((c) =>
          el(
            "li",
            { class: "ov-pair", dataset: { a: c.a, b: c.b } },
            side(c.a, c.aSummary),
            el("span", { class: "versus", title: "contradicts" }, "⟷"),
            side(c.b, c.bSummary),
            el("span", { class: "muted ov-stake" }, `salience at stake ${c.salienceAtStake.toFixed(2)}`),
          ),
        ),
        "No open contradictions.",
      );
    } catch (err) {
      if (gen === generation) sectionFailed(id, err, "findContradictions");
    }
  }

  async function loadReady(gen) {
    const id = "ov-ready";
    try {
      // The queue is computed now (it has no history): the banner says so when in the past.
      const answer = await DG.rpc("ready", { limit: DG.state.project ? 100 : 20 });
      if (gen !== generation) return;
      const actions = answer.actions
        .filter((a) => !DG.state.project || (a.decisionId && DG.inProject(a.decisionId)))
        .slice(0, SHOWN);
      setSection(
        id,
        "ready",
        actions.map((a) => {
          const body = [
            el(
              "div",
              { class: "ov-line" },
              el("span", { class: "prio prio-" + a.priority }, a.priority),
              el("span", { class: "chip" }, a.type.replace(/_/g, " ")),
            ),
            el("div", { class: "ov-text one-line" }, a.title || a.category || a.reason),
            el(
              "div",
              { class: "muted ov-reason one-line", title: a.suggestion || a.reason },
              named(a.suggestion || a.reason, idsIn(a.suggestion || a.reason)),
            ),
          ];
          if (!a.decisionId) return el("li", { class: "ov-static", dataset: { type: a.type } }, body);
          const li = entry(a.decisionId, { title: a.reason }, body);
          li.dataset.type = a.type;
          return li;
        }),
        "Nothing waiting.",
      );
    } catch (err) {
      if (gen === generation) sectionFailed(id, err, "ready");
    }
  }

  // Events up to the viewed seq, newest first (`before` is exclusive).
  async function fetchEvents() {
    const project = DG.state.project && DG.state.project !== DG.NO_PROJECT ? DG.state.project : undefined;
    const params = { limit: EVENTS_SHOWN, order: "desc", project };
    if (DG.past()) params.before = DG.state.asOf.seq + 1;
    const answer = await DG.rpc("listEvents", params);
    // A server that ignored `before` answered the newest: keep what the seq had seen.
    const events = DG.past() ? answer.events.filter((e) => e.seq <= DG.state.asOf.seq) : answer.events;
    return { ...answer, events };
  }

  async function loadEvents(gen) {
    const id = "ov-events";
    try {
      const answer = await fetchEvents();
      if (gen !== generation) return;
      DG.noteEvents(answer.events);
      if (typeof answer.head === "number") DG.emit("head", answer.head);
      const events = answer.events
        .filter((e) => !DG.state.project || (e.nodeIds || []).some(DG.inProject))
        .slice(0, EVENTS_SHOWN);
      setSection(id, "ready", events.map(eventEntry), "No changes yet.");
    } catch (err) {
      if (gen === generation) sectionFailed(id, err, "listEvents");
    }
  }

  // Server texts name nodes by id: put their (short) statements in where the page knows them.
  function named(text, ids) {
    let out = String(text || "");
    for (const id of ids) {
      const name = DG.state.names.get(id);
      if (name) out = out.split(id).join(`“${shortText(name, 32)}”`);
    }
    return out;
  }
  const readable = (e) => named(e.summary || (e.nodeIds || []).join(", "), e.nodeIds || []).replace(/_/g, " ");
  const idsIn = (text) => String(text || "").match(/\b[0-9a-f]{8,}\b/g) || [];

  function eventEntry(e) {
    const target = (e.nodeIds || [])[0];
    const body = [
      el(
        "div",
        { class: "ov-line" },
        el("span", { class: "op op-" + e.op }, e.op.replace(/_/g, " ")),
        el("span", { class: "muted ov-when", title: e.ts }, DG.formatTime(e.ts)),
      ),
      el("div", { class: "ov-text one-line", title: e.summary }, readable(e)),
      el("div", { class: "muted ov-reason" }, `by ${e.actor}`),
    ];
    const travel = el(
      "button",
      {
        type: "button",
        class: "seq-chip",
        title: `View the graph as of seq ${e.seq}`,
        dataset: { asof: e.seq },
        onclick: (event) => {
          event.stopPropagation();
          DG.emit("travel", e.seq);
        },
      },
      `seq ${e.seq}`,
    );
    const li = target
      ? entry(target, { title: "Open " + target }, body)
      : el("li", { class: "ov-static" }, el("div", { class: "ov-item" }, body));
    li.dataset.seq = String(e.seq);
    li.dataset.op = e.op;
    li.prepend(travel);
    return li;
  }

  DG.loadOverview = function loadOverview() {
    const gen = ++generation;
    for (const id of ["ov-salient", "ov-contradictions", "ov-ready", "ov-events"]) $(id).dataset.state = "loading";
    $("ov-ready").classList.toggle("live-only", DG.past());
    return Promise.all([loadSalient(gen), loadContradictions(gen), loadReady(gen), loadEvents(gen)]);
  };

  // -- Search results ------------------------------------------------------------------------
  function signalChips(via) {
    const chips = Object.entries((via && via.signals) || {}).map(([name, value]) =>
      el("span", { class: "chip", title: name }, `${name} ${Number(value.toFixed(3))}`),
    );
    const path = (via && via.path) || [];
    if (path.length) {
      const hops = path.map((step) => step.type).join(" → ");
      chips.push(el("span", { class: "chip path", title: "reached along the graph" }, "via " + hops));
    }
    return chips;
  }

  DG.showTab = function showTab(name) {
    const results = name === "results";
    $("overview").hidden = results;
    $("search-results").hidden = !results;
    $("tab-overview").setAttribute("aria-selected", String(!results));
    $("tab-results").setAttribute("aria-selected", String(results));
  };

  // `quiet`: a re-run (the timeline moved): keep the tab the user is on.
  DG.search = async function search(query, quiet) {
    DG.state.query = query;
    if (!quiet) {
      DG.clearError();
      DG.showTab("results");
    }
    const list = $("results");
    list.setAttribute("aria-busy", "true");
    try {
      const answer = await DG.rpc("recall", DG.timed({ query, limit: 20, explain: true }));
      DG.checkTimed(answer, true);
      $("intent").textContent = `intent: ${answer.intent} · ${answer.preset} · ${answer.queryTimeMs} ms`;
      const hits = answer.results.filter((hit) => DG.inProject(hit.id));
      list.replaceChildren(
        ...hits.map((hit) =>
          el(
            "li",
            { dataset: { id: hit.id }, class: hit.id === DG.state.centerId ? "active" : "" },
            el(
              "button",
              { type: "button", class: "hit", onclick: () => DG.emit("open", hit.id) },
              el(
                "div",
                { class: "hit-head" },
                el("span", { class: "badge kind-" + hit.kind }, hit.kind),
                el("span", { class: "score" }, hit.score.toFixed(3)),
              ),
              el("div", { class: "hit-text" }, hit.text),
              el("div", { class: "chips" }, signalChips(hit.via)),
            ),
          ),
        ),
      );
      $("results-count").textContent = `(${hits.length})`;
      const hidden = answer.results.length - hits.length;
      $("results-empty").textContent = hits.length
        ? ""
        : hidden
          ? `${hidden} results, none in this project.`
          : "Nothing matched that query.";
      $("results-empty").hidden = hits.length > 0;
    } catch (err) {
      DG.showError(err.message);
    } finally {
      list.removeAttribute("aria-busy");
    }
  };

  // Mark the open decision in whichever list shows it.
  const markActive = () => {
    for (const item of document.querySelectorAll(".results li[data-id], .results .side[data-id]")) {
      item.classList.toggle("active", item.dataset.id === DG.state.centerId);
    }
  };
  DG.on("centered", markActive);
  DG.on("listed", markActive);
})();
