// The parts of the table drawn from a view (train/web/views.py): seats, stock and pile, melds,
// scores, and a move log. Shared by the table page and the replay page; returns HTML strings whose
// text is always escaped (seat labels come from record files).
"use strict";

(function () {
  const { esc, cardSvg, cardRow } = window.Cards;

  function sideName(view, side, me) {
    const mine = me !== null && me !== undefined && side === me % view.num_sides;
    return mine ? "Your side" : (view.num_sides === 2 && me !== null && me !== undefined ? "Their side" : `Side ${side}`);
  }

  function seatName(view, p, me) {
    const label = p === me ? "you" : view.players[p].label;
    return `P${p} ${esc(label)}`;
  }

  // Other seats (all seats when omniscient, hands face up).
  function seatsHtml(view, me) {
    return view.players.filter((p) => p.seat !== me).map((p) => {
      const turn = p.to_move ? " to-move" : "";
      const cards = p.hand
        ? `<div class="fan open">${cardRow(p.hand, { small: true })}</div>`
        : `<div class="fan">${Array.from({ length: Math.min(p.cards, 15) }, () => cardSvg("", { back: true, small: true })).join("")}</div>`;
      const known = p.known && p.known.length
        ? `<div class="known">known from the pile: ${cardRow(p.known, { small: true })}</div>` : "";
      const red3 = p.red_threes ? `<span class="red3">${cardRow(Array(p.red_threes).fill("R3"), { small: true })}</span>` : "";
      const reserve = p.reserve ? `<div class="reserve">${p.reserve.shown ? "kitty shown" : "face down"}: ${p.reserve.size}</div>` : "";
      return `<div class="seat${turn}" data-seat="${p.seat}">`
        + `<div class="seat-name">${seatName(view, p.seat, me)}${p.to_move ? " \u25c0 to move" : ""}</div>`
        + `<div class="seat-info">${p.cards} cards ${red3}</div>${cards}${known}${reserve}</div>`;
    }).join("");
  }

  function centreHtml(view, opts = {}) {
    const pile = view.pile;
    const stockAttrs = opts.canDraw ? 'data-clickable="1" tabindex="0"' : "";
    const pileAttrs = opts.canTake ? 'data-clickable="1" tabindex="0"' : "";
    const badges = [];
    if (pile.frozen) badges.push('<span class="badge frozen">FROZEN</span>');
    else if (pile.frozen_for_viewer) badges.push('<span class="badge warn">frozen for your side until it opens</span>');
    if (pile.black_three_top) badges.push('<span class="badge warn">black three on top</span>');
    const top = pile.top ? cardSvg(pile.top) : '<div class="empty-slot">empty</div>';
    const under = pile.size > 1 ? `<div class="pile-under">${cardRow(pile.cards.slice(-8, -1), { small: true })}</div>` : "";
    return `<div id="stock" class="deck${opts.canDraw ? " clickable" : ""}" ${stockAttrs} title="draw from the stock">`
      + `${view.stock ? cardSvg("", { back: true }) : '<div class="empty-slot">empty</div>'}`
      + `<div class="deck-label">Stock <b id="stock-size">${view.stock}</b></div></div>`
      + `<div id="pile" class="deck${opts.canTake ? " clickable" : ""}" ${pileAttrs} title="the discard pile">`
      + `${top}<div class="deck-label">Pile <b id="pile-size">${pile.size}</b></div>${badges.join(" ")}${under}</div>`;
  }

  function meldHtml(meld) {
    const canasta = meld.canasta ? `<div class="canasta ${meld.canasta}">${meld.canasta} canasta</div>` : "";
    return `<div class="meld${meld.canasta ? " is-canasta" : ""}" data-slot="${esc(meld.slot)}">`
      + `<div class="meld-cards">${cardRow(meld.cards, { small: true })}</div>`
      + `<div class="meld-label">${esc(meld.slot)} \u00b7 ${meld.cards.length}</div>${canasta}</div>`;
  }

  function meldsHtml(view, me) {
    return view.sides.map((s) => {
      const owners = s.melds.map((o) => {
        const closed = Object.entries(o.closed || {}).map(([k, n]) => `${n} ${esc(k)}`).join(", ");
        const head = s.melds.length > 1 ? `<div class="owner">P${o.owner}</div>` : "";
        const body = o.melds.length ? o.melds.map(meldHtml).join("") : '<div class="none">no melds yet</div>';
        return `${head}<div class="meld-row">${body}</div>${closed ? `<div class="closed">closed: ${closed}</div>` : ""}`;
      }).join("");
      return `<div class="side-melds" data-side="${s.side}"><h3>${sideName(view, s.side, me)} melds</h3>${owners}</div>`;
    }).join("");
  }

  function scoresHtml(view, me) {
    const rows = view.sides.map((s) => {
      const who = s.seats.map((p) => seatName(view, p, me)).join(", ");
      const status = s.opened ? "opened" : `needs ${s.minimum} to open`;
      return `<tr data-side="${s.side}"><td>${sideName(view, s.side, me)}</td><td>${who}</td>`
        + `<td class="num">${s.score}</td><td>${status}</td><td class="num">${s.red_threes}</td></tr>`;
    }).join("");
    return `<table class="scores"><thead><tr><th>side</th><th>players</th><th>score</th><th>this hand</th>`
      + `<th>red 3s</th></tr></thead><tbody>${rows}</tbody></table>`;
  }

  function topHtml(top) {
    if (!top || !top.length) return "";
    return " <span class=\"top\">[" + top.map(([name, p]) => esc(name) + (p === null ? "" : ` ${(100 * p).toFixed(0)}%`)).join(", ") + "]</span>";
  }

  function logLine(entry) {
    const drew = entry.drew ? `; you drew ${esc(entry.drew.join(" "))}` : "";
    const cls = entry.seat === -1 ? "hand-over" : entry.who === "you" ? "mine" : "";
    const who = entry.seat === -1 ? "" : `<b>P${entry.seat} ${esc(entry.who)}</b>: `;
    return `<li class="${cls}">${who}${esc(entry.text)}${drew}${topHtml(entry.top)}</li>`;
  }

  window.Render = { seatsHtml, centreHtml, meldsHtml, scoresHtml, logLine, topHtml, seatName };
})();
