// decigraph explorer, centre: a d3-force view of a decision's neighbourhood, the edge-family
// filters and the legend. Redraws (a filter, the timeline) keep the nodes where they were.
"use strict";

(function () {
  const DG = window.DG;
  const { $, el, shortText, EDGE_COLORS } = DG;
  const FAMILY_OF = Object.fromEntries([
    ...DG.RELATIONS.map((t) => [t, "relations"]),
    ...DG.DERIVED.map((t) => [t, t]),
  ]);
  let simulation = null;
  let request = 0;
  let positions = { centerId: null, at: new Map() }; // where each node was last drawn

  const radius = (node) => 7 + 17 * Math.sqrt(Math.max(0, node.salience || 0));
  const familyOn = (type) => DG.state.families[FAMILY_OF[type] || "relations"] !== false;

  // getGraph's edge params for the ticked families: the default (decision relations) when
  // nothing derived is ticked, else the exact list of types (edgeTypes always wins).
  function edgeParams() {
    const f = DG.state.families;
    const derived = DG.DERIVED.filter((t) => f[t]);
    if (f.relations && !derived.length) return {};
    const types = [...(f.relations ? DG.RELATIONS : []), ...derived];
    return types.length ? { edgeTypes: types } : null; // null: nothing to walk
  }

  function uniqueEdges(edges) {
    const seen = new Map();
    for (const e of edges) {
      const symmetric = DG.SYMMETRIC.has(e.edgeType);
      const [a, b] = symmetric ? [e.sourceId, e.targetId].sort() : [e.sourceId, e.targetId];
      const key = `${e.edgeType}|${a}|${b}`;
      if (!seen.has(key)) seen.set(key, { ...e, source: a, target: b, symmetric });
    }
    return [...seen.values()];
  }

  function drawLegend(present) {
    const types = Object.keys(EDGE_COLORS).filter(familyOn);
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
    for (const swatch of $("legend").querySelectorAll(".swatch")) swatch.style.background = swatch.dataset.color;
  }
  DG.drawLegend = drawLegend;

  // Scale and centre the settled layout into the view (labels included), never above 1.2x.
  function fitTransform(nodes, width, height) {
    const xs = nodes.flatMap((n) => [n.x - radius(n) - 90, n.x + radius(n) + 90]);
    const ys = nodes.flatMap((n) => [n.y - radius(n) - 10, n.y + radius(n) + 24]);
    const [x0, x1] = d3.extent(xs);
    const [y0, y1] = d3.extent(ys);
    const k = Math.min(1.2, 0.92 * Math.min(width / (x1 - x0 || 1), height / (y1 - y0 || 1)));
    return d3.zoomIdentity.scale(k).translate(-(x0 + x1) / 2, -(y0 + y1) / 2);
  }

  function showCanvasNote(text, state) {
    const svg = $("graph");
    if (simulation) simulation.stop();
    d3.select(svg).selectAll("*").remove();
    svg.dataset.state = state;
    svg.dataset.nodes = "0";
    svg.dataset.edges = "0";
    $("graph-empty").textContent = text;
    $("graph-empty").hidden = false;
    drawLegend(new Set());
  }

  DG.explore = async function explore(nodeId, options) {
    const keepPanel = options && options.keepPanel;
    if (!keepPanel) DG.clearError(); // a redraw (filter, timeline) keeps what was said
    if (DG.state.centerId !== nodeId) positions = { centerId: nodeId, at: new Map() };
    DG.state.centerId = nodeId;
    DG.emit("centered", nodeId);
    const mine = ++request;
    const svg = $("graph");
    svg.dataset.state = "loading";
    const edges = edgeParams();
    const families = Object.keys(DG.state.families).filter((f) => DG.state.families[f]).join(" ");
    const params = DG.timed({ nodeId, depth: Number($("depth").value), ...(edges || {}) });
    try {
      const graph = await DG.rpc("getGraph", params);
      if (mine !== request) return; // a newer click or slider move won
      DG.checkTimed(graph);
      if (!edges) graph.edges = [];
      draw(graph);
      svg.dataset.families = families; // what this drawing shows, for tests and styles
    } catch (err) {
      if (mine !== request) return;
      if (DG.past() && err.code !== "network" && err.code !== 401) {
        showCanvasNote(
          `${nodeId} is not in the graph as of seq ${DG.state.asOf.seq}: it was recorded later ` +
            "(move the timeline forward, or press Now).",
          "missing",
        );
        $("graph-title").textContent = `${nodeId} · not yet recorded at seq ${DG.state.asOf.seq}`;
      } else {
        showCanvasNote("Could not draw this neighbourhood.", "error");
        DG.showError(err.message);
      }
    }
    if (mine !== request) return;
    const inGraph = DG.state.cards.has(DG.state.selectedId);
    if (!keepPanel || !DG.state.selectedId) DG.select(nodeId);
    else DG.select(inGraph || $("graph").dataset.state !== "ready" ? DG.state.selectedId : nodeId);
  };

  // Seed each node where it was last drawn (or beside a drawn neighbour), so that a filter or
  // a timeline move adds and removes nodes without reshuffling the rest.
  function seed(nodes, links) {
    const at = positions.at;
    let known = 0;
    for (const n of nodes) {
      const p = at.get(n.id);
      if (p) {
        n.x = p.x;
        n.y = p.y;
        known++;
      }
    }
    for (const n of nodes) {
      if (at.has(n.id)) continue;
      const l = links.find((l) => (l.source === n.id && at.has(l.target)) || (l.target === n.id && at.has(l.source)));
      if (!l) continue;
      const p = at.get(l.source === n.id ? l.target : l.source);
      const angle = Math.random() * 2 * Math.PI;
      n.x = p.x + 120 * Math.cos(angle);
      n.y = p.y + 120 * Math.sin(angle);
    }
    return known;
  }

  function draw(graph) {
    const svgNode = $("graph");
    const width = svgNode.clientWidth || 800;
    const height = svgNode.clientHeight || 600;
    const all = graph.nodes.map((n) => ({ ...n }));
    for (const n of all) DG.noteName(n.id, n.summary);
    // The project filter: keep the centre, drop the nodes of other projects and their edges.
    const nodes = all.filter((n) => n.id === graph.centerId || DG.inProject(n.id));
    const kept = new Set(nodes.map((n) => n.id));
    const hidden = all.length - nodes.length;
    DG.state.cards = new Map(nodes.map((n) => [n.id, n]));
    const links = uniqueEdges(graph.edges).filter(
      (l) => familyOn(l.edgeType) && kept.has(l.source) && kept.has(l.target),
    );
    const center = nodes.find((n) => n.id === graph.centerId);
    const known = seed(nodes, links);
    if (center) Object.assign(center, { x: 0, y: 0, fx: 0, fy: 0 });
    const when = DG.past() ? ` · as of seq ${DG.state.asOf.seq}` : "";
    $("graph-title").textContent =
      `${shortText(center ? center.summary : graph.centerId, 60)} · ${nodes.length} nodes · ` +
      `${links.length} edges · depth ${graph.depth}` +
      (hidden ? ` · ${hidden} hidden by the project filter` : "") +
      when;
    drawLegend(new Set(links.map((l) => l.edgeType)));
    $("graph-empty").hidden = true;

    if (simulation) simulation.stop();
    const svg = d3.select(svgNode).attr("viewBox", [-width / 2, -height / 2, width, height]);
    svg.selectAll("*").remove();
    svg.classed("past", DG.past());

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
      .attr("class", (d) => "edge" + (FAMILY_OF[d.edgeType] !== "relations" ? " derived" : ""))
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
        (d) => `node kind-${d.kind} lifecycle-${d.lifecycle}` + (d.id === graph.centerId ? " center" : ""),
      )
      .classed("selected", (d) => d.id === DG.state.selectedId)
      .attr("data-id", (d) => d.id)
      .attr("tabindex", 0)
      .on("click", (event, d) => DG.select(d.id))
      .on("dblclick", (event, d) => DG.explore(d.id))
      .on("keydown", (event, d) => {
        if (event.key === "Enter") DG.select(d.id);
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
    // Settle before the first paint, so the view does not wobble (and clicks land); a layout
    // mostly seeded from the last one only needs a gentle nudge.
    const settled = known >= nodes.length - 1 && known > 1;
    if (settled) simulation.alpha(0.15);
    for (let i = 0; i < (settled ? 60 : 300); i++) simulation.tick();
    positions.at = new Map([...positions.at, ...nodes.map((n) => [n.id, { x: n.x, y: n.y }])]);

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
    simulation.on("tick", () => {
      render();
      for (const n of nodes) positions.at.set(n.id, { x: n.x, y: n.y });
    });
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
    svgNode.dataset.asof = DG.past() ? String(DG.state.asOf.seq) : "";
  }

  DG.redraw = () => {
    if (DG.state.centerId) DG.explore(DG.state.centerId, { keepPanel: true });
  };

  DG.markSelected = (id) => d3.selectAll("#graph g.node").classed("selected", (d) => d.id === id);

  // -- Filters -------------------------------------------------------------------------------
  DG.wireFilters = function wireFilters() {
    for (const box of $("families").querySelectorAll("input[data-family]")) {
      box.checked = DG.state.families[box.dataset.family];
      box.addEventListener("change", () => {
        DG.state.families[box.dataset.family] = box.checked;
        DG.emit("filters");
        DG.redraw();
      });
    }
    $("depth").addEventListener("change", () => {
      DG.emit("filters");
      DG.redraw();
    });
    drawLegend(new Set());
  };
})();
