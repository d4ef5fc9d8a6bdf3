// decigraph explorer: wiring. The overview and the timeline load first; clicking any entry
// draws that decision's neighbourhood. The view (decision, seq, project) is kept in the
// URL's fragment, so a link or a reload reopens it.
"use strict";

(function () {
  const DG = window.DG;
  const { $, el } = DG;

  // -- Projects ------------------------------------------------------------------------------
  // listDecisions pages give every decision's project; the select lists them with counts.
  async function loadProjects() {
    const projects = new Map();
    try {
      for (let offset = 0; offset < 20000; offset += 500) {
        const page = await DG.rpc("listDecisions", { limit: 500, offset, includeSuperseded: true });
        for (const d of page.decisions) {
          const project = d.project || (d.project_context && d.project_context.project) || "";
          projects.set(d.id, project);
          DG.noteName(d.id, d.decision);
        }
        if (page.decisions.length < 500 || offset + 500 >= page.total) break;
      }
    } catch (err) {
      return; // no filter rather than a broken one
    }
    DG.state.projects = projects;
    const counts = new Map();
    for (const p of projects.values()) counts.set(p, (counts.get(p) || 0) + 1);
    const named = [...counts.keys()].filter(Boolean).sort();
    const select = $("project");
    const options = [el("option", { value: "" }, "All projects")];
    for (const p of named) options.push(el("option", { value: p }, `${p} (${counts.get(p)})`));
    if (counts.has("") && named.length) {
      options.push(el("option", { value: DG.NO_PROJECT }, `no project (${counts.get("")})`));
    }
    select.replaceChildren(...options);
    select.value = named.includes(DG.state.project) ? DG.state.project : "";
    DG.state.project = select.value;
    $("project-filter").hidden = named.length === 0;
  }

  // -- The URL fragment ----------------------------------------------------------------------
  function readHash() {
    const params = new URLSearchParams(location.hash.slice(1));
    const seq = Number(params.get("seq"));
    return {
      node: params.get("node"),
      seq: Number.isInteger(seq) && seq > 0 ? seq : null,
      project: params.get("project") || "",
    };
  }

  function writeHash() {
    const params = new URLSearchParams();
    if (DG.state.centerId) params.set("node", DG.state.centerId);
    if (DG.past()) params.set("seq", String(DG.state.asOf.seq));
    if (DG.state.project) params.set("project", DG.state.project);
    const hash = params.toString();
    history.replaceState(null, "", hash ? "#" + hash : location.pathname + location.search);
  }

  // -- Wiring --------------------------------------------------------------------------------
  function wire() {
    $("search").addEventListener("submit", (event) => {
      event.preventDefault();
      const query = $("query").value.trim();
      if (query) DG.search(query);
    });
    $("tab-overview").addEventListener("click", () => DG.showTab("overview"));
    $("tab-results").addEventListener("click", () => DG.showTab("results"));
    $("overview-refresh").addEventListener("click", async () => {
      try {
        const status = await DG.rpc("getReplicaStatus", {});
        DG.emit("head", status.seq);
      } catch (err) {
        // the overview's listEvents answer carries the head too
      }
      DG.loadOverview();
    });
    $("project").addEventListener("change", () => {
      DG.state.project = $("project").value;
      writeHash();
      DG.loadOverview();
      DG.redraw();
    });
    $("error-close").addEventListener("click", DG.clearError);
    $("signout").hidden = DG.token() === null; // nothing to forget on a --no-auth server
    $("signout").addEventListener("click", DG.signOut);
    $("signin-again").addEventListener("click", DG.signOut);
    DG.on("authlost", () => {
      DG.showError("The server refused the saved token (revoked or changed?): sign in again.");
      $("signin-again").hidden = false;
    });
    DG.on("open", (id) => DG.explore(id));
    DG.on("centered", writeHash);
    DG.on("asof", () => {
      writeHash();
      DG.loadOverview();
      if (DG.state.query) DG.search(DG.state.query, true);
      if (DG.state.centerId) DG.redraw();
      else if (DG.state.selectedId) DG.select(DG.state.selectedId);
    });
    DG.wireFilters();
  }

  async function start() {
    if (typeof d3 === "undefined") {
      DG.showError("d3 did not load: run `make ui` on the server and reload.");
      return;
    }
    wire();
    const wanted = readHash();
    DG.state.project = wanted.project;
    await Promise.all([DG.wireTimeline(), loadProjects()]);
    if (wanted.seq && wanted.seq < DG.state.head) DG.setAsOf(wanted.seq); // loads the overview
    else DG.loadOverview();
    if (wanted.node) DG.explore(wanted.node);
    writeHash();
    document.body.dataset.ready = "true";
  }

  start();
})();
