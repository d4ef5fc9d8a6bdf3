// decigraph explorer: recall search, a d3-force view of a neighbourhood, a side panel.
// Plain ES, no build step. Every piece of server data goes through textContent or d3's
// .text()/.attr(), never innerHTML, so stored text cannot inject markup.
"use strict";

(function () {
  const EDGE_COLORS = {
    depends_on: "#2563eb",
    supersedes: "#7c3aed",
    contradicts: "#dc2626",
    blocks: "#ea580c",
    refines: "#0d9488",
    relates_to: "#65a30d",
    caused_by: "#c026d3",
    temporal: "#94a3b8",
    entity: "#a8a29e",
    semantic: "#7dd3fc",
    causal: "#d6b98c",
  };
  // Derived by retrieval on write; hidden unless "Derived edges" is ticked.
  const DERIVED = new Set(["temporal", "entity", "semantic", "causal"]);
  // Stored as two directed edges; drawn once, without an arrow.
  const SYMMETRIC = new Set(["contradicts", "relates_to", "temporal", "entity", "semantic"]);

  const $ = (id) => document.getElementById(id);
  const state = { centerId: null, selectedId: null, panelRequest: 0, cards: new Map() };

  // -- DOM helpers ---------------------------------------------------------------------------
  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(props || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (key === "class") node.className = value;
      else if (key === "dataset") Object.assign(node.dataset, value);
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children.flat()) {
      if (child === undefined || child === null || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function showError(message) {
    $("error-text").textContent = message;
    $("error").hidden = false;
  }

  function clearError() {
    $("error").hidden = true;
    $("error-text").textContent = "";
  }

  const shortText = (text, n) => (text.length > n ? text.slice(0, n - 1) + "…" : text);
  const percent = (x) => Math.round(x * 100) + "%";

  // -- JSON-RPC ----------------------------------------------------------------------------
  function token() {
    for (const part of document.cookie.split(";")) {
      const [name, ...rest] = part.trim().split("=");
      if (name === "decigraph_token") return decodeURIComponent(rest.join("="));
    }
    return null;
  }

  let nextId = 1;
  async function rpc(method, params) {
    const headers = { "Content-Type": "application/json" };
    const bearer = token();
    if (bearer) headers.Authorization = "Bearer " + bearer;
    let response;
    try {
      response = await fetch("/cstp", {
        method: "POST",
        headers,
        body: JSON.stringify({ jsonrpc: "2.0", id: nextId++, method: "cstp." + method, params }),
      });
    } catch (err) {
      throw new Error(`${method}: the server did not answer (${err.message})`);
    }
    if (response.status === 401) {
      throw new Error(`${method}: the token was refused; sign out and paste a valid one`);
    }
    let body;
    try {
      body = await response.json();
    } catch (err) {
      throw new Error(`${method}: HTTP ${response.status} without a JSON answer`);
    }
    if (body.error) {
      const field = body.error.data && body.error.data.field ? ` (${body.error.data.field})` : "";
      throw new Error(`${method}: ${body.error.message}${field}`);
    }
    return body.result;
  }

  // -- Search --------------------------------------------------------------------------------
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

  async function search(query) {
    clearError();
    const list = $("results");
    list.setAttribute("aria-busy", "true");
    try {
      const answer = await rpc("recall", { query, limit: 20 });
      $("intent").textContent = `intent: ${answer.intent} · ${answer.preset} · ${answer.queryTimeMs} ms`;
      list.replaceChildren(
        ...answer.results.map((hit) =>
          el(
            "li",
            { dataset: { id: hit.id }, class: hit.id === state.centerId ? "active" : "" },
            el(
              "button",
              { type: "button", class: "hit", onclick: () => explore(hit.id) },
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
      $("results-empty").textContent = answer.results.length ? "" : "Nothing matched that query.";
      $("results-empty").hidden = answer.results.length > 0;
    } catch (err) {
      showError(err.message);
    } finally {
      list.removeAttribute("aria-busy");
    }
  }

  // -- Graph ---------------------------------------------------------------------------------
  function radius(node) {
    return 7 + 17 * Math.sqrt(Math.max(0, node.salience || 0));
  }

  function uniqueEdges(edges) {
    const seen = new Map();
    for (const e of edges) {
      const symmetric = SYMMETRIC.has(e.edgeType);
      const [a, b] = symmetric ? [e.sourceId, e.targetId].sort() : [e.sourceId, e.targetId];
      const key = `${e.edgeType}|${a}|${b}`;
      if (!seen.has(key)) seen.set(key, { ...e, source: a, target: b, symmetric });
    }
    return [...seen.values()];
  }

  function drawLegend(present) {
    const showDerived = $("derived").checked;
    const types = Object.keys(EDGE_COLORS).filter((t) => showDerived || !DERIVED.has(t));
    $("legend").replaceChildren(
      ...types.map((type) =>
        el(
          "span",
          { class: "legend-item" + (present.has(type) ? "" : " absent"), dataset: { type } },
          el("span", { class: "swatch", dataset: { color: EDGE_COLORS[type] } }),
          type.replace("_", " "),
        ),
      ),
      el("span", { class: "legend-item note" }, "node size = salience"),
    );
    // Colours set through CSSOM (allowed by the page's CSP, unlike style attributes).
    for (const swatch of $("legend").querySelectorAll(".swatch")) {
      swatch.style.background = swatch.dataset.color;
    }
  }

  let simulation = null;

  // Scale and centre the settled layout into the view (labels included), never above 1.2x (text stays readable, not huge).
  function fitTransform(nodes, width, height) {
    const xs = nodes.flatMap((n) => [n.x - radius(n) - 90, n.x + radius(n) + 90]);
    const ys = nodes.flatMap((n) => [n.y - radius(n) - 10, n.y + radius(n) + 24]);
    const [x0, x1] = d3.extent(xs);
    const [y0, y1] = d3.extent(ys);
    const k = Math.min(1.2, 0.92 * Math.min(width / (x1 - x0 || 1), height / (y1 - y0 || 1)));
    return d3.zoomIdentity.scale(k).translate(-(x0 + x1) / 2, -(y0 + y1) / 2);
  }

  async function explore(nodeId) {
    clearError();
    state.centerId = nodeId;
    for (const li of $("results").children) li.classList.toggle("active", li.dataset.id === nodeId);
    const depth = Number($("depth").value);
    const params = { nodeId, depth };
    // getGraph walks the decision relations unless asked for the derived edges too.
    if ($("derived").checked) params.includeDerived = true;
    const svg = $("graph");
    svg.dataset.state = "loading";
    try {
      const graph = await rpc("getGraph", params);
      if (state.centerId !== nodeId) return; // a newer click won
      draw(graph);
      select(nodeId);
    } catch (err) {
      svg.dataset.state = "error";
      showError(err.message);
    }
  }

  function draw(graph) {
    const svgNode = $("graph");
    const width = svgNode.clientWidth || 800;
    const height = svgNode.clientHeight || 600;
    const nodes = graph.nodes.map((n) => ({ ...n }));
    state.cards = new Map(nodes.map((n) => [n.id, n]));
    const links = uniqueEdges(graph.edges);
    const center = nodes.find((n) => n.id === graph.centerId);
    if (center) Object.assign(center, { fx: 0, fy: 0 });
    $("graph-title").textContent =
      `${shortText(center ? center.summary : graph.centerId, 70)} · ${nodes.length} nodes · ` +
      `${links.length} edges · depth ${graph.depth}`;
    drawLegend(new Set(links.map((l) => l.edgeType)));

    if (simulation) simulation.stop();
    const svg = d3.select(svgNode).attr("viewBox", [-width / 2, -height / 2, width, height]);
    svg.selectAll("*").remove();

    const defs = svg.append("defs");
    for (const [type, color] of Object.entries(EDGE_COLORS)) {
      defs
        .append("marker")
        .attr("id", "arrow-" + type)
        .attr("viewBox", "0 -5 10 10")
        .attr("refX", 10)
        .attr("markerWidth", 7)
        .attr("markerHeight", 7)
        .attr("orient", "auto")
        .append("path")
        .attr("d", "M0,-5L10,0L0,5")
        .attr("fill", color);
    }
    const world = svg.append("g").attr("class", "world");
    const zoom = d3
      .zoom()
      .scaleExtent([0.25, 4])
      .on("zoom", (event) => world.attr("transform", event.transform));
    svg.call(zoom);
    svg.on("dblclick.zoom", null); // double-click re-centres on a node instead

    const link = world
      .append("g")
      .attr("class", "edges")
      .selectAll("line")
      .data(links)
      .join("line")
      .attr("class", (d) => "edge" + (DERIVED.has(d.edgeType) ? " derived" : ""))
      .attr("data-type", (d) => d.edgeType)
      .attr("data-source", (d) => d.source)
      .attr("data-target", (d) => d.target)
      .attr("stroke", (d) => EDGE_COLORS[d.edgeType] || "#64748b")
      .attr("marker-end", (d) => (d.symmetric ? null : `url(#arrow-${d.edgeType})`));
    link.append("title").text((d) => `${d.sourceId} ${d.edgeType} ${d.targetId}`);

    const node = world
      .append("g")
      .attr("class", "nodes")
      .selectAll("g")
      .data(nodes, (d) => d.id)
      .join("g")
      .attr(
        "class",
        (d) =>
          `node kind-${d.kind} lifecycle-${d.lifecycle}` + (d.id === graph.centerId ? " center" : ""),
      )
      .attr("data-id", (d) => d.id)
      .attr("tabindex", 0)
      .on("click", (event, d) => select(d.id))
      .on("dblclick", (event, d) => explore(d.id))
      .on("keydown", (event, d) => {
        if (event.key === "Enter") select(d.id);
      });
    node
      .append("circle")
      .attr("r", radius)
      .attr("data-salience", (d) => (d.salience || 0).toFixed(3));
    node
      .append("text")
      .attr("class", "label")
      .attr("dy", (d) => radius(d) + 13)
      .text((d) => shortText(d.summary, 34));
    node
      .append("title")
      .text((d) => `${d.summary}\n${d.kind} · ${d.lifecycle} · salience ${(d.salience || 0).toFixed(2)}`);

    simulation = d3
      .forceSimulation(nodes)
      .force(
        "link",
        d3
          .forceLink(links)
          .id((d) => d.id)
          .distance(150),
      )
      .force("charge", d3.forceManyBody().strength(-800))
      .force("collide", d3.forceCollide().radius((d) => radius(d) + 40))
      .force("x", d3.forceX().strength(0.04))
      .force("y", d3.forceY().strength(0.06))
      .stop();
    // Settle before the first paint, so the view does not wobble (and clicks land).
    for (let i = 0; i < 300; i++) simulation.tick();

    function render() {
      link.each(function (d) {
        // End lines at the circle's edge so arrowheads stay visible.
        const dx = d.target.x - d.source.x;
        const dy = d.target.y - d.source.y;
        const length = Math.hypot(dx, dy) || 1;
        const back = d.symmetric ? 0 : radius(d.target) + 2;
        d3.select(this)
          .attr("x1", d.source.x)
          .attr("y1", d.source.y)
          .attr("x2", d.target.x - (dx / length) * back)
          .attr("y2", d.target.y - (dy / length) * back);
      });
      node.attr("transform", (d) => `translate(${d.x},${d.y})`);
    }
    render();
    simulation.on("tick", render);
    svg.call(zoom.transform, fitTransform(nodes, width, height));
    // Reheat only once the pointer really moves: a plain click must not shake the layout.
    let dragging = false;
    node.call(
      d3
        .drag()
        .on("drag", (event, d) => {
          if (!dragging) {
            dragging = true;
            simulation.alphaTarget(0.2).restart();
          }
          d.fx = event.x;
          d.fy = event.y;
        })
        .on("end", (event, d) => {
          if (!dragging) return;
          dragging = false;
          simulation.alphaTarget(0);
          if (d.id !== graph.centerId) {
            d.fx = null;
            d.fy = null;
          }
        }),
    );
    svgNode.dataset.state = "ready";
    svgNode.dataset.nodes = String(nodes.length);
    svgNode.dataset.edges = String(links.length);
  }

  // -- Side panel ----------------------------------------------------------------------------
  function field(label, value) {
    if (value === undefined || value === null || value === "" || (Array.isArray(value) && !value.length)) {
      return null;
    }
    const shown = Array.isArray(value) ? value.join(", ") : String(value);
    return [el("dt", {}, label), el("dd", { dataset: { field: label } }, shown)];
  }

  function section(title, ...children) {
    return el("section", { class: "panel-section" }, el("h3", {}, title), ...children);
  }

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
          el("button", { type: "button", class: "link", onclick: () => select(other) }, summary),
          el(
            "div",
            { class: "muted" },
            `${other} · salience at stake ${c.salienceAtStake.toFixed(2)}`,
          ),
        );
      }),
    );
  }

  async function select(nodeId) {
    clearError();
    state.selectedId = nodeId;
    const request = ++state.panelRequest;
    d3.selectAll("#graph g.node").classed("selected", (d) => d.id === nodeId);
    const panel = $("panel");
    panel.dataset.state = "loading";
    panel.replaceChildren(el("p", { class: "muted" }, "Loading…"));
    try {
      const got = await rpc("getDecision", { id: nodeId });
      if (!got.found) throw new Error(`getDecision: ${nodeId} is not in the graph`);
      const d = got.decision;
      const neighbours = await rpc("getNeighbors", {
        nodeId,
        direction: "outgoing",
        edgeType: "contradicts",
        limit: 100,
      });
      const contradicted = neighbours.neighbors.map((n) => n.node.id);
      const isDecision = (d.kind || "decision") === "decision";
      const [verdict, contradictions] = await Promise.all([
        isDecision ? rpc("checkGuardrails", { action: guardrailAction(d, contradicted) }) : null,
        rpc("findContradictions", { status: "all", limit: 500 }),
      ]);
      if (request !== state.panelRequest) return; // the user clicked elsewhere meanwhile
      // The graph's card knows the derived lifecycle (superseded) and the salience.
      const card = state.cards.get(nodeId) || {};
      const lifecycle = card.lifecycle || d.lifecycle;
      const parts = [
        el(
          "div",
          { class: "panel-head" },
          el("span", { class: "badge kind-" + (d.kind || "decision") }, d.kind || "decision"),
          lifecycle ? el("span", { class: "badge lifecycle-" + lifecycle }, lifecycle) : null,
          el("code", { class: "node-id" }, d.id),
          el(
            "button",
            { type: "button", class: "ghost small", onclick: () => explore(d.id), title: "Centre the graph here" },
            "Centre graph",
          ),
        ),
        el("h2", { id: "panel-text", class: "decision-text" }, d.decision),
        el(
          "dl",
          { class: "facts" },
          field("status", d.status),
          field("confidence", d.confidence === undefined ? null : percent(d.confidence)),
          field("category", d.category),
          field("stakes", d.stakes),
          field("outcome", d.outcome),
          field("salience", card.salience === undefined ? null : card.salience.toFixed(2)),
          field("recorded by", d.recordedBy),
          field("date", d.date ? d.date.slice(0, 16).replace("T", " ") : null),
          field("tags", d.tags),
        ),
        d.context ? section("Context", el("p", {}, d.context)) : null,
        d.reasons && d.reasons.length
          ? section("Reasons", el("ul", {}, d.reasons.map((r) => el("li", {}, `${r.type}: ${r.text}`))))
          : null,
        section(
          "Guardrails",
          verdict ? guardrailView(verdict) : el("p", { class: "muted" }, "Guardrails apply to decisions only."),
        ),
        section("Contradictions", contradictionView(nodeId, contradictions.contradictions)),
      ];
      panel.replaceChildren(...parts.filter(Boolean)); // replaceChildren would print "null"
      panel.dataset.state = "ready";
      panel.dataset.id = nodeId;
    } catch (err) {
      if (request !== state.panelRequest) return;
      panel.dataset.state = "error";
      panel.replaceChildren(el("p", { class: "muted" }, "Could not load this node."));
      showError(err.message);
    }
  }

  // -- Wiring --------------------------------------------------------------------------------
  function start() {
    if (typeof d3 === "undefined") {
      showError("d3 did not load: run `make ui` on the server and reload.");
      return;
    }
    $("search").addEventListener("submit", (event) => {
      event.preventDefault();
      const query = $("query").value.trim();
      if (query) search(query);
    });
    for (const id of ["depth", "derived"]) {
      $(id).addEventListener("change", () => state.centerId && explore(state.centerId));
    }
    $("error-close").addEventListener("click", clearError);
    $("signout").hidden = token() === null; // nothing to forget on a --no-auth server
    $("signout").addEventListener("click", () => {
      document.cookie = "decigraph_token=; Path=/ui; SameSite=Strict; Max-Age=0";
      location.reload();
    });
    drawLegend(new Set());
  }

  start();
})();
