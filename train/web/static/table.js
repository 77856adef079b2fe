// The table page: one game against the server's agents. The server holds the game (by id, kept in
// the page's address and in localStorage, so a reload finds it); the page only offers the legal moves
// the server lists, and every click is one POST /api/games/{id}/actions {seat, action, version}.
// Click a card of your hand to see the moves that use it (meld, add to a meld, discard); click the
// stock to draw, the pile to take it. "All legal moves" lists every move as a fallback.
"use strict";

(function () {
  const { html, setHtml, drawPart, int, text, list, cardRow, request } = window.Cards;
  const R = window.Render;
  const $ = (id) => document.getElementById(id);
  let view = null;
  let selected = null; // a kind of card in the hand, or "pile"
  let busy = false;
  let seenHands = null; // hands_done already shown in the banner
  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

  async function call(method, url, body) {
    const init = { method, headers: {} };
    if (body !== undefined) {
      init.headers["content-type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    return request(url, init);
  }

  // The table a request answers; when the agents are still thinking (202, or a GET answered 409
  // "busy"), the table is asked for again until they have moved.
  async function api(method, url, body) {
    for (let tries = 0; ; tries++) {
      try {
        const answer = await call(method, url, body);
        if (answer.status !== 202 || !answer.data.busy) return answer.data;
        [method, url, body] = ["GET", `/api/games/${encodeURIComponent(text(answer.data.id))}`, undefined];
      } catch (err) {
        if (!(err.busy && method === "GET") || tries > 600) throw err;
      }
      $("status").textContent = "the agents are thinking\u2026";
      await sleep(250);
    }
  }

  function showError(message) {
    const box = $("error");
    box.textContent = message || "";
    box.hidden = !message;
  }

  function gameIdFromPage() {
    const m = /game=([0-9a-f]{16})/.exec(location.hash);
    const kept = localStorage.getItem("canasta.game");
    return m ? m[1] : /^[0-9a-f]{16}$/.test(kept || "") ? kept : null;
  }

  function remember(id) {
    if (!/^[0-9a-f]{16}$/.test(id)) return;
    localStorage.setItem("canasta.game", id);
    if (location.hash !== `#game=${id}`) history.replaceState(null, "", `#game=${id}`);
  }

  async function newGame() {
    showError("");
    selected = null;
    seenHands = 0;
    setView(await api("POST", "/api/games", {}));
  }

  async function load() {
    const id = gameIdFromPage();
    if (id) {
      try {
        const v = await api("GET", `/api/games/${id}`);
        seenHands = v.hands_done;
        setView(v);
        return;
      } catch (err) {
        if (err.status !== 404 && err.status !== 410) throw err;
      }
    }
    await newGame();
  }

  async function play(action) {
    if (busy || !view) return;
    busy = true;
    document.body.dataset.busy = "1";
    try {
      const v = await api("POST", `/api/games/${encodeURIComponent(text(view.id))}/actions`, { seat: view.seat, action, version: view.version });
      selected = null;
      showError("");
      setView(v);
    } catch (err) {
      showError(err.message);
      try { setView(await api("GET", `/api/games/${encodeURIComponent(text(view.id))}`)); } catch (_) { /* keep the old view */ }
    } finally {
      busy = false;
      delete document.body.dataset.busy;
    }
  }

  // The view as the page draws it: lists where lists belong, whatever the answer held.
  function setView(v) {
    view = { ...v, players: list(v.players), legal: list(v.legal).filter((m) => m && typeof m === "object"), log: list(v.log) };
    remember(text(v.id));
    render();
  }

  function movesFor(kind) {
    if (kind === "pile") return view.legal.filter((m) => text(m.name).startsWith("TAKE_PILE"));
    return view.legal.filter((m) => list(m.cards).includes(kind));
  }

  function button(m, extra = "") {
    const cards = list(m.cards).length ? html` <span class="mini">${cardRow(m.cards, { small: true })}</span>` : "";
    return html`<button type="button" class="move ${extra}" data-action="${int(m.id)}" data-name="${text(m.name)}" title="${text(m.name)}">${text(m.text)}${cards}</button>`;
  }

  function actionsHtml() {
    if (!view.your_turn) return "";
    if (selected) {
      const moves = movesFor(selected);
      const what = selected === "pile" ? "the pile" : `your ${text(selected)}`;
      const buttons = moves.length ? moves.map((m) => button(m)) : html`<span class="note">no legal move uses ${what} now</span>`;
      return html`<div class="prompt">Moves using ${what}:</div>${buttons}<button type="button" class="plain" id="clear">cancel</button>`;
    }
    const free = view.legal.filter((m) => !list(m.cards).length || text(m.name).startsWith("TAKE_PILE"));
    const prompt = view.phase === "draw" ? "Draw from the stock or take the pile" : "Click a card of your hand to meld, add or discard it";
    return html`<div class="prompt">${prompt}</div>${free.map((m) => button(m))}`;
  }

  function handHtml(me) {
    const playable = new Set(view.legal.flatMap((m) => list(m.cards)));
    const seen = {};
    return list(me.hand).map((k) => {
      seen[k] = (seen[k] || 0) + 1;
      const cls = [k === selected ? "selected" : "", view.your_turn && playable.has(k) ? "playable" : ""].join(" ");
      return window.Cards.cardSvg(k, { index: seen[k] - 1, extra: cls, tabindex: true });
    });
  }

  function banner() {
    const b = $("banner");
    if (view.game_over) {
      setHtml(b, html`<b>${text(view.result) || "Game over."}</b> ${lastHandHtml()} <button type="button" id="banner-new">New game</button>`);
      b.hidden = false;
    } else if (view.last_hand && view.hands_done !== seenHands) {
      setHtml(b, html`${lastHandHtml()} <button type="button" id="banner-ok">Continue</button>`);
      b.hidden = false;
    } else {
      b.hidden = true;
    }
  }

  function lastHandHtml() {
    const h = view.last_hand;
    if (!h) return "";
    const link = `/replay#file=${encodeURIComponent(text(h.record_file))}&hand=${int(h.record_index)}`;
    const scores = `Hand scores ${JSON.stringify(h.hand_scores)}, game scores ${JSON.stringify(h.scores)}.`;
    return html`Hand ${int(h.hand)} over: ${text(h.text)}. ${scores} <a id="replay-hand" href="${link}">Replay this hand</a>`;
  }

  function panel(id, build) {
    drawPart($(id), build, "table");
  }

  function statusText(v) {
    if (v.game_over) return text(v.result) || "Game over";
    if (v.your_turn) return `Your turn (${text(v.phase)})`;
    const mover = v.players[v.to_move];
    return `P${int(v.to_move)} ${text(mover && mover.label)} to move`;
  }

  function render() {
    const v = view;
    const me = v.players[v.seat] || {};
    $("game-info").textContent = `${text(v.rules)} \u00b7 hand ${int(v.hand_number)} \u00b7 dealer P${int(v.dealer)} \u00b7 game ${text(v.id)}`;
    const canDraw = v.legal.some((m) => m.name === "DRAW_STOCK");
    const canTake = v.legal.some((m) => text(m.name).startsWith("TAKE_PILE"));
    panel("seats", () => R.seatsHtml(v, v.seat));
    panel("centre", () => R.centreHtml(v, { canDraw, canTake }));
    panel("melds", () => R.meldsHtml(v, v.seat));
    panel("scores", () => R.scoresHtml(v, v.seat));
    panel("log", () => html`${v.log.slice().reverse().map(R.logLine)}`);
    $("status").textContent = statusText(v);
    const progress = v.minimum_progress;
    $("progress").textContent = progress
      ? `melded toward your minimum: ${int(progress.melded)} of ${int(progress.needed)}` : "";
    panel("hand", () => (list(me.hand).length ? html`${handHtml(me)}` : html`<span class="note">no cards</span>`));
    $("hand").dataset.count = String(int(me.cards));
    $("you").querySelector(".you-head").dataset.red3 = me.red_threes ? ` \u00b7 red threes ${int(me.red_threes)}` : "";
    const hint = $("hint");
    hint.hidden = !(v.hint && $("show-hint").checked);
    panel("hint", () => (v.hint ? html`Agent hint:${R.topHtml(v.hint)}` : ""));
    panel("actions", actionsHtml);
    panel("legal-list", () => (v.legal.length ? html`${v.legal.map((m, i) => button(m, i === 0 ? "first" : ""))}`
      : html`<span class="note">not your turn</span>`));
    banner();
    document.body.dataset.version = String(int(v.version));
    document.body.dataset.over = v.game_over ? "1" : "0";
    document.body.dataset.handsDone = String(int(v.hands_done));
    window.__table = v; // for tests and the curious: the view the page shows
  }

  document.addEventListener("click", (ev) => {
    const t = ev.target instanceof Element ? ev.target : null;
    if (!t || !view) return;
    const move = t.closest("button.move");
    if (move) return void play(Number(move.dataset.action));
    const card = t.closest("#hand .card");
    if (card && view.your_turn) {
      selected = selected === card.dataset.kind ? null : card.dataset.kind;
      return void render();
    }
    if (t.closest("#stock.clickable")) {
      const draw = view.legal.find((m) => m.name === "DRAW_STOCK");
      if (draw) return void play(draw.id);
    }
    if (t.closest("#pile.clickable")) {
      const takes = movesFor("pile");
      if (takes.length === 1) return void play(takes[0].id);
      selected = "pile";
      return void render();
    }
    if (t.id === "clear") { selected = null; return void render(); }
    if (t.id === "new-game" || t.id === "banner-new") return void newGame().catch((e) => showError(e.message));
    if (t.id === "banner-ok") { seenHands = view.hands_done; return void render(); }
    if (t.id === "show-hint") return void render();
  });

  load().catch((err) => showError(`cannot load the table: ${err.message}`));
})();
