// Cards drawn as SVG, and HTML escaping. Shared by the table (table.js) and the replay (replay.js).
// Suits do not matter in Canasta except for the colour of threes, so naturals get a suit only for
// looks (cycled by position); red threes are hearts, black threes spades.
"use strict";

const SUITS = ["\u2660", "\u2665", "\u2666", "\u2663"]; // spade heart diamond club

function esc(text) {
  return String(text).replace(/[&<>"']/g, (c) => ({
    "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;",
  }[c]));
}

function rankLabel(kind) {
  if (kind === "T") return "10";
  if (kind === "R3" || kind === "B3") return "3";
  if (kind === "JK") return "\u2605";
  return kind;
}

function suitOf(kind, index) {
  if (kind === "R3") return SUITS[1];
  if (kind === "B3") return SUITS[0];
  if (kind === "JK") return "";
  return SUITS[index % 4];
}

// One card as an SVG string. opts: {back, small, selected, index, extra (class names), attrs}
function cardSvg(kind, opts = {}) {
  const w = 60, h = 84;
  const cls = ["card"];
  if (opts.small) cls.push("small");
  if (opts.selected) cls.push("selected");
  if (opts.extra) cls.push(opts.extra);
  const attrs = opts.attrs || "";
  if (opts.back) {
    return `<svg class="${cls.join(" ")} back" viewBox="0 0 ${w} ${h}" ${attrs} role="img" aria-label="card back">`
      + `<rect x="1" y="1" width="${w - 2}" height="${h - 2}" rx="6" fill="#27407a" stroke="#fff" stroke-width="2"/>`
      + `<rect x="6" y="6" width="${w - 12}" height="${h - 12}" rx="4" fill="none" stroke="#8fa8e0" stroke-width="1.5"/>`
      + `<path d="M${w / 2} 18 L${w - 14} ${h / 2} L${w / 2} ${h - 18} L14 ${h / 2} Z" fill="#8fa8e0" opacity="0.6"/>`
      + `</svg>`;
  }
  const suit = suitOf(kind, opts.index || 0);
  const red = kind === "R3" || suit === SUITS[1] || suit === SUITS[2];
  const colour = kind === "JK" ? "#7a2ea0" : red ? "#c8102e" : "#111";
  const wild = kind === "JK" || kind === "2";
  const label = rankLabel(kind);
  const centre = kind === "JK"
    ? `<text x="${w / 2}" y="${h / 2 + 4}" font-size="13" text-anchor="middle" font-weight="700" fill="${colour}">JOKER</text>`
    : `<text x="${w / 2}" y="${h / 2 + 12}" font-size="30" text-anchor="middle" fill="${colour}">${suit}</text>`;
  return `<svg class="${cls.join(" ")}" viewBox="0 0 ${w} ${h}" ${attrs} data-kind="${esc(kind)}" role="img" aria-label="${esc(kind)}">`
    + `<rect x="1" y="1" width="${w - 2}" height="${h - 2}" rx="6" fill="${wild ? "#fff8e1" : "#fff"}" stroke="#333" stroke-width="1.5"/>`
    + `<text x="6" y="19" font-size="16" font-weight="700" fill="${colour}">${esc(label)}</text>`
    + `<text x="7" y="33" font-size="12" fill="${colour}">${suit}</text>`
    + centre
    + `<text x="${w - 6}" y="${h - 8}" font-size="16" font-weight="700" text-anchor="end" fill="${colour}">${esc(label)}</text>`
    + `</svg>`;
}

// A row of cards (kind names) as SVG strings; the same kinds share a position-based suit cycle.
function cardRow(kinds, opts = {}) {
  const seen = {};
  return kinds.map((k) => {
    seen[k] = (seen[k] || 0) + 1;
    return cardSvg(k, { ...opts, index: seen[k] - 1 });
  }).join("");
}

window.Cards = { esc, cardSvg, cardRow };
