// The replay page: pick a record file (one in the server's record dir, or upload one), pick a hand,
// then step forward and back or jump to a turn. The server replays the hand through the engine and
// sends every frame at once (omniscient: every hand face up), with each move and, where the record
// has them, the mover's top choices.
"use strict";

(function () {
  const { esc } = window.Cards;
  const R = window.Render;
  const $ = (id) => document.getElementById(id);
  let hand = null; // {frames, moves, ...}
  let step = 0;

  async function api(method, url, body, type) {
    const r = await fetch(url, { method, body, headers: type ? { "content-type": type } : {} });
    const data = await r.json().catch(() => ({ error: `HTTP ${r.status}` }));
    if (!r.ok) throw new Error(data.error || `HTTP ${r.status}`);
    return data;
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
    const { files } = await api("GET", "/api/records");
    const sel = $("file-select");
    const names = files.map((f) => f.file);
    if (chosen && !names.includes(chosen)) names.unshift(chosen);
    sel.innerHTML = '<option value="">choose a record file</option>' + names.map((n) => {
      const f = files.find((x) => x.file === n);
      const what = f ? ` (${f.hands} hand${f.hands === 1 ? "" : "s"})` : "";
      return `<option value="${esc(n)}">${esc(n)}${what}</option>`;
    }).join("");
    if (chosen) sel.value = chosen;
  }

  async function openFile(name, handIndex, atStep) {
    showError("");
    const { hands } = await api("GET", `/api/records/${encodeURIComponent(name)}`);
    $("hand-select").innerHTML = hands.map((h) => `<option value="${h.index}">hand ${h.index + 1}: `
      + `${esc(h.rules)}, ${esc(h.seats.join(" vs "))}, ${h.decisions} decisions, ${esc(h.end)}</option>`).join("");
    const k = Math.min(Math.max(handIndex || 0, 0), hands.length - 1);
    $("hand-select").value = String(k);
    await openHand(name, k, atStep || 0);
  }

  async function openHand(name, k, atStep) {
    hand = await api("GET", `/api/records/${encodeURIComponent(name)}/hands/${k}`);
    $("step-range").max = String(hand.moves.length);
    $("step-input").max = String(hand.moves.length);
    $("moves").innerHTML = hand.moves.map((m) => `<li data-step="${m.i}"><b>P${m.seat} ${esc(m.who)}</b>: `
      + `${esc(m.text)}${R.topHtml(m.top)}</li>`).join("");
    $("replay-info").textContent = `${hand.rules} \u00b7 hand ${hand.hand_number} \u00b7 ${hand.seats.join(" vs ")}`;
    go(atStep);
  }

  function go(s) {
    if (!hand) return;
    step = Math.min(Math.max(Number(s) || 0, 0), hand.moves.length);
    const frame = hand.frames[step];
    $("seats").innerHTML = R.seatsHtml(frame, null);
    $("centre").innerHTML = R.centreHtml(frame);
    $("melds").innerHTML = R.meldsHtml(frame, null);
    $("scores").innerHTML = R.scoresHtml(frame, null);
    const n = hand.moves.length;
    const next = hand.moves[step];
    const box = $("move-now");
    box.hidden = false;
    box.innerHTML = next
      ? `Turn ${step} of ${n}: <b>P${next.seat} ${esc(next.who)}</b> plays ${esc(next.text)} (${esc(next.name)})${R.topHtml(next.top)}`
      : `End of the hand: ${esc(hand.end)}; hand scores ${esc(JSON.stringify(hand.hand_scores))}, `
        + `game scores ${esc(JSON.stringify(hand.scores_after))}${hand.matches ? " \u00b7 the replay matches the record" : ""}`;
    $("outcome").innerHTML = `<div class="you-head">Scores before the hand ${esc(JSON.stringify(hand.scores_before))}`
      + ` \u00b7 after ${esc(JSON.stringify(hand.scores_after))}</div>`;
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
