// decigraph explorer, shared core: constants, DOM helpers, the JSON-RPC client, shared state
// and a tiny event bus. Loaded first; the other scripts hang their parts on window.DG.
// Plain ES, no build step. Server data goes through textContent or d3's .text()/.attr(),
// never innerHTML, so stored text cannot inject markup.
"use strict";

(function () {
  const DG = (window.DG = window.DG || {});

  // -- Edge types and families -------------------------------------------------------------
  DG.EDGE_COLORS = {
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
  // The seven decision relations people make; the four families retrieval derives on write.
  DG.RELATIONS = ["depends_on", "supersedes", "contradicts", "blocks", "refines", "relates_to", "caused_by"];
  DG.DERIVED = ["temporal", "entity", "semantic", "causal"];
  // Stored as two directed edges; drawn once, without an arrow.
  DG.SYMMETRIC = new Set(["contradicts", "relates_to", "temporal", "entity", "semantic"]);
  DG.METHOD_NOT_FOUND = -32601;

  // -- Shared state --------------------------------------------------------------------------
  DG.state = {
    centerId: null, // the decision whose neighbourhood is drawn
    selectedId: null, // the node shown in the side panel
    cards: new Map(), // id -> node card of the drawn graph
    asOf: null, // null = live; else {seq, ts} (ts may be null until the server says it)
    head: 0, // the newest seq the server has applied
    project: "", // "" = every project; NO_PROJECT = decisions without one
    projects: new Map(), // decision id -> project ("" when it has none)
    families: { relations: true, temporal: false, entity: false, semantic: false, causal: false },
    timeTravel: true, // false once the server showed it ignores asOf
    seqTimes: new Map(), // seq -> ISO time, from every event the page has seen
    names: new Map(), // id -> summary, from every answer that named a node
    query: null, // the last search, re-run when the timeline moves
  };
  DG.NO_PROJECT = "\u0000none";

  // -- Event bus -----------------------------------------------------------------------------
  const listeners = new Map();
  DG.on = (name, fn) => {
    if (!listeners.has(name)) listeners.set(name, []);
    listeners.get(name).push(fn);
  };
  DG.emit = (name, detail) => {
    for (const fn of listeners.get(name) || []) fn(detail);
  };

  // -- DOM helpers ---------------------------------------------------------------------------
  DG.$ = (id) => document.getElementById(id);

  DG.el = function el(tag, props, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(props || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (key === "class") node.className = value;
      else if (key === "dataset") Object.assign(node.dataset, value);
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children.flat(Infinity)) {
      if (child === undefined || child === null || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  };

  DG.shortText = (text, n) => {
    const s = String(text === undefined || text === null ? "" : text);
    return s.length > n ? s.slice(0, n - 1) + "…" : s;
  };
  DG.percent = (x) => Math.round(x * 100) + "%";

  // "2025-03-04 09:15 UTC": the server's times are UTC; one zone keeps seqs comparable.
  DG.formatTime = (iso, seconds) => {
    if (!iso) return "";
    const d = new Date(iso);
    if (Number.isNaN(d.getTime())) return String(iso);
    const text = d.toISOString().slice(0, seconds ? 19 : 16).replace("T", " ");
    return text + " UTC";
  };

  // A value of a before/after change, readable in one line.
  DG.formatValue = (value) => {
    if (value === undefined || value === null) return "—";
    if (typeof value === "string") return value;
    if (Array.isArray(value) && value.every((v) => typeof v !== "object")) return value.join(", ");
    return JSON.stringify(value);
  };

  DG.showError = (message) => {
    DG.$("error-text").textContent = message;
    DG.$("error").hidden = false;
  };
  DG.clearError = () => {
    DG.$("error").hidden = true;
    DG.$("error-text").textContent = "";
    DG.$("signin-again").hidden = true;
  };

  // An empty-state or "not available" line inside a list's container.
  DG.note = (text, cls, attrs) => DG.el("p", { class: "muted note " + (cls || ""), ...(attrs || {}) }, text);

  // -- Token ---------------------------------------------------------------------------------
  // The login form keeps the token in a session cookie scoped to /ui (see service/http/ui.py:
  // the page load itself must carry it, which Web Storage cannot). We read it here and send
  // it as a Bearer header: /cstp never accepts the cookie.
  DG.COOKIE = "decigraph_token";
  DG.token = () => {
    for (const part of document.cookie.split(";")) {
      const [name, ...rest] = part.trim().split("=");
      if (name === DG.COOKIE) return decodeURIComponent(rest.join("="));
    }
    return null;
  };
  DG.signOut = () => {
    document.cookie = DG.COOKIE + "=; Path=/ui; SameSite=Strict; Max-Age=0";
    location.reload();
  };

  // -- JSON-RPC ------------------------------------------------------------------------------
  class RpcError extends Error {
    constructor(method, message, code, data) {
      super(`${method}: ${message}`);
      this.method = method;
      this.code = code;
      this.data = data;
    }
    get unavailable() {
      return this.code === DG.METHOD_NOT_FOUND;
    }
  }
  DG.RpcError = RpcError;

  let nextId = 1;
  DG.rpc = async function rpc(method, params) {
    const headers = { "Content-Type": "application/json" };
    const bearer = DG.token();
    if (bearer) headers.Authorization = "Bearer " + bearer;
    let response;
    try {
      response = await fetch("/cstp", {
        method: "POST",
        headers,
        body: JSON.stringify({ jsonrpc: "2.0", id: nextId++, method: "cstp." + method, params: params || {} }),
      });
    } catch (err) {
      throw new RpcError(method, `the server did not answer (${err.message})`, "network");
    }
    if (response.status === 401) {
      DG.emit("authlost");
      throw new RpcError(method, "the token was refused; sign in again", 401);
    }
    let body;
    try {
      body = await response.json();
    } catch (err) {
      throw new RpcError(method, `HTTP ${response.status} without a JSON answer`, response.status);
    }
    if (body.error) {
      const data = body.error.data || {};
      const field = data.field ? ` (${data.field})` : "";
      throw new RpcError(method, body.error.message + field, body.error.code, data);
    }
    return body.result;
  };

  // A read "as it stood": adds asOf while the timeline is in the past.
  DG.past = () => DG.state.asOf !== null;
  DG.timed = (params) => (DG.past() ? { ...params, asOf: DG.state.asOf.seq } : { ...params });

  // Checks that a timed answer really is from the past. A server without time travel drops
  // the unknown asOf (with a warning) and answers now: say so, once, and go back to live.
  // `lenient`: only the warning proves it (answers that may not stamp asOf, like a miss).
  DG.checkTimed = (answer, lenient) => {
    if (!DG.past() || !answer) return true;
    const warned = (answer.warnings || []).some((w) => String(w).startsWith("asOf:"));
    if (!warned && answer.asOf && typeof answer.asOf.seq === "number") {
      if (answer.asOf.ts) DG.state.seqTimes.set(answer.asOf.seq, answer.asOf.ts);
      if (DG.state.asOf.seq === answer.asOf.seq && answer.asOf.ts && !DG.state.asOf.ts) {
        DG.state.asOf = { seq: answer.asOf.seq, ts: answer.asOf.ts };
        DG.emit("asoftime", DG.state.asOf);
      }
      return true;
    }
    if (lenient && !warned) return true;
    if (DG.state.timeTravel) {
      DG.state.timeTravel = false;
      DG.emit("notimetravel");
    }
    return false;
  };

  // Remember the time of every event seen, for the timeline's labels.
  DG.noteEvents = (events) => {
    for (const e of events || []) if (e && typeof e.seq === "number" && e.ts) DG.state.seqTimes.set(e.seq, e.ts);
  };

  DG.noteName = (id, text) => {
    if (id && text) DG.state.names.set(id, String(text));
  };
  DG.nameOf = (id) => DG.state.names.get(id) || id;

  // -- Projects ------------------------------------------------------------------------------
  DG.projectOf = (id) => (DG.state.projects.has(id) ? DG.state.projects.get(id) : null);
  // Does this decision pass the project filter? Unknown ids (memories, forgotten nodes) only
  // pass when no project is chosen.
  DG.inProject = (id) => {
    const want = DG.state.project;
    if (!want) return true;
    const have = DG.projectOf(id);
    if (have === null) return false;
    return want === DG.NO_PROJECT ? have === "" : have === want;
  };
})();
