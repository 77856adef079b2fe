// The replay page: pick a record file (one in the server's record dir, or upload one), pick a hand,
// then step forward and back or jump to a turn. The server replays the hand through the engine and
// sends every frame at once (omniscient: every hand face up), with each move and, where the record
// has them, the mover's top choices. Every value (file names, seat labels, moves) is drawn as text:
// through Cards.html and Cards.setHtml, or textContent.
"use strict";

(function () {
  const { html, setHtml, drawPart, int, text, list, request } = window.Cards;
  const R = window.Render;
  const $ = (id) => document.getElementById(id);
  let hand = null; // {frames, moves, ...}
  let step = 0;

  async function api(method, url, body, type) {
    return (await request(url, { method, body, headers: type ? { "content-type": type } : {} })).data;
  }

  function showError(message) {
    $("error").textContent = message || "";
    $("error").hidden = !message;
  }

  function params() {
    const p = new URLSearchParams(location.hash.slice(1));
    return { file: p.get("file"), hand: Number(p.get("hand") || 0), step: Number(p.get("step") || 0) };
  }

  function setHash() {
    const f = $("file-select").value;
    if (!f) return;
    history.replaceState(null, "", `#file=${encodeURIComponent(f)}&hand=${$("hand-select").value || 0}&step=${step}`);
  }

  async function listFiles(chosen) {
    const files = list((await api("GET", "/api/records")).files).filter((f) => f && typeof f.file === "string");
    const sel = $("file-select");
    const names = files.map((f) => f.file);
    if (chosen && !names.includes(chosen)) names.unshift(chosen);
    setHtml(sel, html`<option value="">choose a record file</option>${names.map((n) => {
      const f = files.find((x) => x.file === n);
      const what = f ? ` (${int(f.hands)} hand${f.hands === 1 ? "" : "s"})` : "";
      return html`<option value="${n}">${n}${what}</option>`;
    })}`);
    if (chosen) sel.value = chosen;
  }

  async function openFile(name, handIndex, atStep) {
    showError("");
    const hands = list((await api("GET", `/api/records/${encodeURIComponent(name)}`)).hands);
    setHtml($("hand-select"), html`${hands.map((h, i) => {
      const what = `${text(h.rules)}, ${list(h.seats).map(text).join(" vs ")}, ${int(h.decisions)} decisions, ${text(h.end)}`;
      return html`<option value="${i}">hand ${i + 1}: ${what}</option>`;
    })}`);
    const k = Math.min(Math.max(handIndex || 0, 0), hands.length - 1);
    $("hand-select").value = String(k);
    await openHand(name, k, atStep || 0);
  }

  async function openHand(name, k, atStep) {
    const answer = await api("GET", `/api/records/${encodeURIComponent(name)}/hands/${k}`);
    hand = { ...answer, moves: list(answer.moves).filter((m) => m && typeof m === "object"), frames: list(answer.frames) };
    $("step-range").max = String(hand.moves.length);
    $("step-input").max = String(hand.moves.length);
    setHtml($("moves"), html`${hand.moves.map((m, i) => moveLine(m, i))}`);
    $("replay-info").textContent = `${text(hand.rules)} \u00b7 hand ${int(hand.hand_number)} \u00b7 ${list(hand.seats).map(text).join(" vs ")}`;
    go(atStep);
  }

  // One move of the list: "P1 heuristic: draw from the stock [DRAW_STOCK]".
  function moveLine(m, i) {
    return html`<li data-step="${i}"><b>P${int(m.seat)} ${text(m.who)}</b>: ${text(m.text)}${R.topHtml(m.top)}</li>`;
  }

  function panel(id, build) {
    drawPart($(id), build, "hand");
  }

  function moveNow(n) {
    const next = hand.moves[step];
    if (next) {
      return html`Turn ${step} of ${n}: <b>P${int(next.seat)} ${text(next.who)}</b> plays ${text(next.text)} (${text(next.name)})${R.topHtml(next.top)}`;
    }
    const scores = `hand scores ${JSON.stringify(hand.hand_scores)}, game scores ${JSON.stringify(hand.scores_after)}`;
    return html`End of the hand: ${text(hand.end)}; ${scores}${hand.matches ? " \u00b7 the replay matches the record" : ""}`;
  }

  function go(s) {
    if (!hand) return;
    step = Math.min(Math.max(Number(s) || 0, 0), hand.moves.length);
    const frame = hand.frames[step] || {};
    panel("seats", () => R.seatsHtml(frame, null));
    panel("centre", () => R.centreHtml(frame));
    panel("melds", () => R.meldsHtml(frame, null));
    panel("scores", () => R.scoresHtml(frame, null));
    const n = hand.moves.length;
    $("move-now").hidden = false;
    panel("move-now", () => moveNow(n));
    const before = `Scores before the hand ${JSON.stringify(hand.scores_before)} \u00b7 after ${JSON.stringify(hand.scores_after)}`;
    panel("outcome", () => html`<div class="you-head">${before}</div>`);
    $("step-range").value = String(step);
    $("step-input").value = String(step);
    $("step-label").textContent = `step ${step} of ${n}`;
    document.querySelectorAll("#moves li").forEach((li) => li.classList.toggle("current", Number(li.dataset.step) === step));
    const cur = document.querySelector("#moves li.current");
    if (cur) cur.scrollIntoView({ block: "nearest" });
    document.body.dataset.step = String(step);
    document.body.dataset.steps = String(n);
    setHash();
  }

  async function upload(file) {
    const body = await file.arrayBuffer();
    const r = await api("POST", "/api/records", body, "application/x-ndjson");
    await listFiles(r.file);
    await openFile(r.file, 0, 0);
  }

  const guard = (p) => p.catch((err) => showError(err.message));
  $("first").onclick = () => go(0);
  $("prev").onclick = () => go(step - 1);
  $("next").onclick = () => go(step + 1);
  $("last").onclick = () => hand && go(hand.moves.length);
  $("jump").onclick = () => go($("step-input").value);
  $("step-input").onkeydown = (ev) => { if (ev.key === "Enter") go(ev.target.value); };
  $("step-range").oninput = (ev) => go(ev.target.value);
  $("file-select").onchange = (ev) => ev.target.value && guard(openFile(ev.target.value, 0, 0));
  $("hand-select").onchange = (ev) => guard(openHand($("file-select").value, Number(ev.target.value), 0));
  $("upload").onchange = (ev) => ev.target.files[0] && guard(upload(ev.target.files[0]));
  $("moves").onclick = (ev) => {
    const li = ev.target instanceof Element ? ev.target.closest("li") : null;
    if (li) go(li.dataset.step);
  };
  document.addEventListener("keydown", (ev) => {
    if (ev.target instanceof HTMLInputElement && ev.target.type === "number") return;
    if (ev.key === "ArrowRight") go(step + 1);
    if (ev.key === "ArrowLeft") go(step - 1);
  });

  const start = params();
  guard(listFiles(start.file).then(() => (start.file ? openFile(start.file, start.hand, start.step) : null)));
})();
