// The table page: one game against the server's agents. The server holds the game (by id, kept in
// the page's address and in localStorage, so a reload finds it); the page only offers the legal moves
// the server lists, and every click is one POST /api/games/{id}/actions {seat, action, version}.
// Click a card of your hand to see the moves that use it (meld, add to a meld, discard); click the
// stock to draw, the pile to take it. "All legal moves" lists every move as a fallback.
"use strict";

(function () {
  const { esc, cardRow } = window.Cards;
  const R = window.Render;
  const $ = (id) => document.getElementById(id);
  let view = null;
  let selected = null; // a kind of card in the hand, or "pile"
  let busy = false;
  let seenHands = null; // hands_done already shown in the banner

  async function api(method, url, body) {
    const init = { method, headers: {} };
    if (body !== undefined) {
      init.headers["content-type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    const r = await fetch(url, init);
    const data = await r.json().catch(() => ({ error: `HTTP ${r.status}` }));
    if (!r.ok) throw Object.assign(new Error(data.error || `HTTP ${r.status}`), { status: r.status });
    return data;
  }

  function showError(message) {
    const box = $("error");
    box.textContent = message || "";
    box.hidden = !message;
  }

  function gameIdFromPage() {
    const m = /game=([0-9a-f]{16})/.exec(location.hash);
    return m ? m[1] : localStorage.getItem("canasta.game");
  }

  function remember(id) {
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
      const v = await api("POST", `/api/games/${view.id}/actions`, { seat: view.seat, action, version: view.version });
      selected = null;
      showError("");
      setView(v);
    } catch (err) {
      showError(err.message);
      try { setView(await api("GET", `/api/games/${view.id}`)); } catch (_) { /* keep the old view */ }
    } finally {
      busy = false;
      delete document.body.dataset.busy;
    }
  }

  function setView(v) {
    view = v;
    remember(v.id);
    render();
  }

  function movesFor(kind) {
    if (kind === "pile") return view.legal.filter((m) => m.name.startsWith("TAKE_PILE"));
    return view.legal.filter((m) => m.cards.includes(kind));
  }

  function button(m, extra = "") {
    return `<button type="button" class="move ${extra}" data-action="${m.id}" data-name="${esc(m.name)}" title="${esc(m.name)}">`
      + `${esc(m.text)}${m.cards.length ? ` <span class="mini">${cardRow(m.cards, { small: true })}</span>` : ""}</button>`;
  }

  function actionsHtml() {
    if (!view.your_turn) return "";
    if (selected) {
      const moves = movesFor(selected);
      const what = selected === "pile" ? "the pile" : `your ${esc(selected)}`;
      const list = moves.length ? moves.map((m) => button(m)).join("") : `<span class="note">no legal move uses ${what} now</span>`;
      return `<div class="prompt">Moves using ${what}:</div>${list}<button type="button" class="plain" id="clear">cancel</button>`;
    }
    const free = view.legal.filter((m) => !m.cards.length || m.name.startsWith("TAKE_PILE"));
    const prompt = view.phase === "draw" ? "Draw from the stock or take the pile" : "Click a card of your hand to meld, add or discard it";
    return `<div class="prompt">${prompt}</div>${free.map((m) => button(m)).join("")}`;
  }

  function handHtml(me) {
    const playable = new Set(view.legal.flatMap((m) => m.cards));
    const seen = {};
    return (me.hand || []).map((k) => {
      seen[k] = (seen[k] || 0) + 1;
      const cls = [k === selected ? "selected" : "", view.your_turn && playable.has(k) ? "playable" : ""].join(" ");
      return window.Cards.cardSvg(k, { index: seen[k] - 1, extra: cls, attrs: 'tabindex="0"' });
    }).join("");
  }

  function banner() {
    const b = $("banner");
    if (view.game_over) {
      b.innerHTML = `<b>${esc(view.result || "Game over.")}</b> ${lastHandHtml()} <button type="button" id="banner-new">New game</button>`;
      b.hidden = false;
    } else if (view.last_hand && view.hands_done !== seenHands) {
      b.innerHTML = `${lastHandHtml()} <button type="button" id="banner-ok">Continue</button>`;
      b.hidden = false;
    } else {
      b.hidden = true;
    }
  }

  function lastHandHtml() {
    const h = view.last_hand;
    if (!h) return "";
    const link = `/replay#file=${encodeURIComponent(h.record_file)}&hand=${h.record_index}`;
    return `Hand ${h.hand} over: ${esc(h.text)}. Hand scores ${esc(JSON.stringify(h.hand_scores))}, `
      + `game scores ${esc(JSON.stringify(h.scores))}. <a id="replay-hand" href="${link}">Replay this hand</a>`;
  }

  function render() {
    const v = view;
    const me = v.players[v.seat];
    $("game-info").textContent = `${v.rules} \u00b7 hand ${v.hand_number} \u00b7 dealer P${v.dealer} \u00b7 game ${v.id}`;
    $("seats").innerHTML = R.seatsHtml(v, v.seat);
    const canDraw = v.legal.some((m) => m.name === "DRAW_STOCK");
    const canTake = v.legal.some((m) => m.name.startsWith("TAKE_PILE"));
    $("centre").innerHTML = R.centreHtml(v, { canDraw, canTake });
    $("melds").innerHTML = R.meldsHtml(v, v.seat);
    $("scores").innerHTML = R.scoresHtml(v, v.seat);
    $("log").innerHTML = v.log.slice().reverse().map(R.logLine).join("");
    const mover = v.players[v.to_move];
    $("status").textContent = v.game_over ? (v.result || "Game over")
      : v.your_turn ? `Your turn (${v.phase})` : `P${v.to_move} ${mover.label} to move`;
    $("progress").textContent = v.minimum_progress
      ? `melded toward your minimum: ${v.minimum_progress.melded} of ${v.minimum_progress.needed}` : "";
    const red3 = me.red_threes ? ` \u00b7 red threes ${me.red_threes}` : "";
    $("hand").innerHTML = handHtml(me) || '<span class="note">no cards</span>';
    $("hand").dataset.count = String(me.cards);
    $("you").querySelector(".you-head").dataset.red3 = red3;
    const hint = $("hint");
    hint.hidden = !(v.hint && $("show-hint").checked);
    hint.innerHTML = v.hint ? `Agent hint:${R.topHtml(v.hint)}` : "";
    $("actions").innerHTML = actionsHtml();
    $("legal-list").innerHTML = v.legal.map((m, i) => button(m, i === 0 ? "first" : "")).join("") || '<span class="note">not your turn</span>';
    banner();
    document.body.dataset.version = String(v.version);
    document.body.dataset.over = v.game_over ? "1" : "0";
    document.body.dataset.handsDone = String(v.hands_done);
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
