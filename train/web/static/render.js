// The parts of the table drawn from a view (train/web/views.py): seats, stock and pile, melds,
// scores, and a move log. Shared by the table page and the replay page. Every part is built with
// Cards.html (each value escaped: seat labels and moves come from record files and saved games) and
// reads the view through Cards.int/text/list, so a malformed value draws as "?" or nothing; a log
// entry that cannot be drawn at all is drawn as a placeholder line, never blanking the log.
"use strict";

(function () {
  const { html, int, text, list, cardSvg, cardRow } = window.Cards;

  function sideName(view, side, me) {
    const seated = me !== null && me !== undefined;
    if (seated && side === me % view.num_sides) return "Your side";
    return view.num_sides === 2 && seated ? "Their side" : `Side ${int(side)}`;
  }

  // "P1 heuristic" as html (the label escaped); "you" at the viewer's own seat.
  function seatName(view, p, me) {
    const player = list(view.players)[p];
    const label = p === me ? "you" : text(player && player.label);
    return html`P${int(p)} ${label}`;
  }

  function seatHtml(view, p, me) {
    const cards = Array.isArray(p.hand)
      ? html`<div class="fan open">${cardRow(p.hand, { small: true })}</div>`
      : html`<div class="fan">${Array.from({ length: Math.min(Math.max(int(p.cards) | 0, 0), 15) },
        () => cardSvg("", { back: true, small: true }))}</div>`;
    const known = list(p.known).length
      ? html`<div class="known">known from the pile: ${cardRow(p.known, { small: true })}</div>` : "";
    const threes = Math.min(Math.max(int(p.red_threes) | 0, 0), 8);
    const red3 = threes ? html`<span class="red3">${cardRow(Array(threes).fill("R3"), { small: true })}</span>` : "";
    const reserve = p.reserve
      ? html`<div class="reserve">${p.reserve.shown ? "kitty shown" : "face down"}: ${int(p.reserve.size)}</div>` : "";
    return html`<div class="seat${p.to_move ? " to-move" : ""}" data-seat="${int(p.seat)}">
      <div class="seat-name">${seatName(view, p.seat, me)}${p.to_move ? " \u25c0 to move" : ""}</div>
      <div class="seat-info">${int(p.cards)} cards ${red3}</div>${cards}${known}${reserve}</div>`;
  }

  // Other seats (all seats when omniscient, hands face up).
  function seatsHtml(view, me) {
    return html`${list(view.players).filter((p) => p && p.seat !== me).map((p) => seatHtml(view, p, me))}`;
  }

  function centreHtml(view, opts = {}) {
    const pile = view.pile || {};
    const badges = [];
    if (pile.frozen) badges.push(html`<span class="badge frozen">FROZEN</span> `);
    else if (pile.frozen_for_viewer) badges.push(html`<span class="badge warn">frozen for your side until it opens</span> `);
    if (pile.black_three_top) badges.push(html`<span class="badge warn">black three on top</span>`);
    const top = pile.top ? cardSvg(pile.top) : html`<div class="empty-slot">empty</div>`;
    const under = int(pile.size) > 1
      ? html`<div class="pile-under">${cardRow(list(pile.cards).slice(-8, -1), { small: true })}</div>` : "";
    const clickable = (yes) => (yes ? html` data-clickable="1" tabindex="0"` : "");
    const back = view.stock ? cardSvg("", { back: true }) : html`<div class="empty-slot">empty</div>`;
    const stock = html`<div id="stock" class="deck${opts.canDraw ? " clickable" : ""}"${clickable(opts.canDraw)} title="draw from the stock">${back}<div class="deck-label">Stock <b id="stock-size">${int(view.stock)}</b></div></div>`;
    return html`${stock}<div id="pile" class="deck${opts.canTake ? " clickable" : ""}"${clickable(opts.canTake)} title="the discard pile">${top}<div class="deck-label">Pile <b id="pile-size">${int(pile.size)}</b></div>${badges}${under}</div>`;
  }

  function meldHtml(meld) {
    const kind = ["natural", "mixed"].includes(meld.canasta) ? meld.canasta : null;
    const canasta = kind ? html`<div class="canasta ${kind}">${kind} canasta</div>` : "";
    return html`<div class="meld${kind ? " is-canasta" : ""}" data-slot="${text(meld.slot)}">
      <div class="meld-cards">${cardRow(meld.cards, { small: true })}</div>
      <div class="meld-label">${text(meld.slot)} \u00b7 ${list(meld.cards).length}</div>${canasta}</div>`;
  }

  function ownerHtml(side, o) {
    const closed = Object.entries(o.closed || {}).map(([k, n]) => `${int(n)} ${text(k)}`).join(", ");
    const head = list(side.melds).length > 1 ? html`<div class="owner">P${int(o.owner)}</div>` : "";
    const melds = list(o.melds);
    const body = melds.length ? melds.map(meldHtml) : html`<div class="none">no melds yet</div>`;
    return html`${head}<div class="meld-row">${body}</div>${closed ? html`<div class="closed">closed: ${closed}</div>` : ""}`;
  }

  function meldsHtml(view, me) {
    return html`${list(view.sides).map((s) => html`<div class="side-melds" data-side="${int(s.side)}">
      <h3>${sideName(view, s.side, me)} melds</h3>${list(s.melds).map((o) => ownerHtml(s, o))}</div>`)}`;
  }

  function scoresHtml(view, me) {
    const rows = list(view.sides).map((s) => {
      const who = list(s.seats).map((p, i) => html`${i ? ", " : ""}${seatName(view, p, me)}`);
      const status = s.opened ? "opened" : `needs ${int(s.minimum)} to open`;
      return html`<tr data-side="${int(s.side)}"><td>${sideName(view, s.side, me)}</td><td>${who}</td>
        <td class="num">${int(s.score)}</td><td>${status}</td><td class="num">${int(s.red_threes)}</td></tr>`;
    });
    return html`<table class="scores"><thead><tr><th>side</th><th>players</th><th>score</th><th>this hand</th>
      <th>red 3s</th></tr></thead><tbody>${rows}</tbody></table>`;
  }

  // A decision's top choices, " [DRAW_STOCK 62%, ...]"; anything not of that shape is left out.
  function topHtml(top) {
    const choices = list(top).filter((c) => Array.isArray(c) && c.length >= 1);
    if (!choices.length) return "";
    const shown = choices.map(([name, p], i) => {
      const share = typeof p === "number" && Number.isFinite(p) ? ` ${(100 * p).toFixed(0)}%` : "";
      return `${i ? ", " : ""}${text(name)}${share}`;
    });
    return html` <span class="top">[${shown}]</span>`;
  }

  function logLineHtml(entry) {
    const drew = Array.isArray(entry.drew) ? html`; you drew ${entry.drew.map(text).join(" ")}` : "";
    const cls = entry.seat === -1 ? "hand-over" : entry.who === "you" ? "mine" : "";
    const who = entry.seat === -1 ? "" : html`<b>P${int(entry.seat)} ${text(entry.who)}</b>: `;
    return html`<li class="${cls}">${who}${text(entry.text)}${drew}${topHtml(entry.top)}</li>`;
  }

  // One log line; an entry that cannot be drawn is a placeholder line, the others still drawn.
  function logLine(entry) {
    try {
      if (entry && typeof entry === "object") return logLineHtml(entry);
    } catch (err) {
      console.warn("log entry not drawn", err);
    }
    return html`<li class="bad">(a move the page cannot show)</li>`;
  }

  window.Render = { seatsHtml, centreHtml, meldsHtml, scoresHtml, logLine, topHtml, seatName };
})();
