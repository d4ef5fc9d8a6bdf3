// decigraph explorer: the timeline. A slider over the log's seqs 1..head; moving it shows the
// graph, the overview and the panel as they stood after that event (every read carries
// asOf: <seq>); "Now" (or the slider's right end) returns to live.
"use strict";

(function () {
  const DG = window.DG;
  const { $ } = DG;
  const DEBOUNCE_MS = 250;
  let timer = null;

  const slider = () => $("asof");

  function timeOf(seq) {
    return DG.state.seqTimes.get(seq) || null;
  }

  function label(seq) {
    const ts = timeOf(seq);
    return `seq ${seq}` + (ts ? ` · ${DG.formatTime(ts, true)}` : "");
  }

  // The label beside the slider, the banner, the Now buttons: all from the state.
  function paint() {
    const past = DG.past();
    const out = $("asof-label");
    if (!DG.state.timeTravel) {
      out.textContent = "now (this server has no time travel)";
    } else if (past) {
      out.textContent = label(DG.state.asOf.seq);
    } else {
      out.textContent = DG.state.head ? `now · ${label(DG.state.head)}` : "now";
    }
    out.classList.toggle("past", past);
    $("timeline").classList.toggle("past", past);
    $("asof-now").disabled = !past;
    $("asof-banner").hidden = !past;
    document.body.classList.toggle("viewing-past", past);
    if (past) {
      const ts = DG.state.asOf.ts || timeOf(DG.state.asOf.seq);
      $("asof-banner-text").textContent =
        `Viewing the past: as of seq ${DG.state.asOf.seq}` + (ts ? `, ${DG.formatTime(ts, true)}` : "");
    }
    $("asof-banner").dataset.seq = past ? String(DG.state.asOf.seq) : "";
    $("timeline-end").textContent = DG.state.head
      ? `seq ${DG.state.head}` + (timeOf(DG.state.head) ? ` · ${DG.formatTime(timeOf(DG.state.head))}` : "")
      : "now";
    $("timeline-start").textContent = "seq 1" + (timeOf(1) ? ` · ${DG.formatTime(timeOf(1))}` : "");
  }

  function setHead(head) {
    if (typeof head !== "number" || head < 0) return;
    DG.state.head = Math.max(DG.state.head, head);
    const s = slider();
    s.max = String(Math.max(1, DG.state.head));
    s.disabled = !DG.state.timeTravel || DG.state.head < 2;
    if (!DG.past()) s.value = s.max;
    paint();
  }

  // Look up the time of one seq (listEvents), for the label and the banner.
  async function fetchTime(seq) {
    if (timeOf(seq)) return;
    try {
      const answer = await DG.rpc("listEvents", { after: seq - 1, limit: 1, order: "asc" });
      DG.noteEvents(answer.events);
      if (typeof answer.head === "number") setHead(answer.head);
      if (DG.past() && DG.state.asOf.seq === seq && timeOf(seq)) DG.state.asOf.ts = timeOf(seq);
      paint();
    } catch (err) {
      // Without listEvents the answers' own asOf.ts fills the banner in (DG.checkTimed).
    }
  }

  DG.setAsOf = function setAsOf(seq) {
    clearTimeout(timer);
    const live = seq === null || seq >= DG.state.head || !DG.state.timeTravel;
    const before = DG.past() ? DG.state.asOf.seq : null;
    DG.state.asOf = live ? null : { seq, ts: timeOf(seq) };
    slider().value = String(live ? DG.state.head : seq);
    paint();
    if ((live ? null : seq) === before) return;
    if (!live) fetchTime(seq);
    DG.emit("asof", DG.state.asOf);
  };

  DG.goLive = () => DG.setAsOf(null);

  DG.wireTimeline = async function wireTimeline() {
    const s = slider();
    s.addEventListener("input", () => {
      const seq = Number(s.value);
      $("asof-label").textContent = seq >= DG.state.head ? `now · ${label(seq)}` : label(seq);
      clearTimeout(timer);
      timer = setTimeout(() => DG.setAsOf(seq), DEBOUNCE_MS);
    });
    // Keyboard steps and the end of a drag apply at once.
    s.addEventListener("change", () => DG.setAsOf(Number(s.value)));
    $("asof-now").addEventListener("click", DG.goLive);
    $("asof-banner-now").addEventListener("click", DG.goLive);
    DG.on("head", setHead);
    DG.on("travel", (seq) => DG.setAsOf(seq));
    DG.on("asoftime", paint);
    DG.on("notimetravel", () => {
      DG.goLive();
      setHead(DG.state.head);
      DG.showError("This server ignores asOf (no time travel yet): showing the graph as it is now.");
    });
    try {
      const status = await DG.rpc("getReplicaStatus", {});
      setHead(status.seq);
    } catch (err) {
      paint(); // the overview's listEvents may still give the head
    }
    fetchTime(1);
  };

  DG.paintTimeline = paint;
})();
