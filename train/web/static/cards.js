// Cards drawn as SVG, and the page's one way to put markup into the DOM. Shared by the table
// (table.js) and the replay (replay.js).
//
// Every value from the server (seat labels, agent names, moves, top choices, file names) is text:
// markup is only ever built with the html`...` tag, which escapes each value put into it unless that
// value is itself html`...`, and it reaches the DOM only through setHtml (the one innerHTML in the
// page's scripts); plain text goes through textContent. Values are also checked for their type
// (int, text, list) so a malformed answer draws what it can instead of throwing.
//
// Suits do not matter in Canasta except for the colour of threes, so naturals get a suit only for
// looks (cycled by position); red threes are hearts, black threes spades.
"use strict";

(function () {
  const SUITS = ["\u2660", "\u2665", "\u2666", "\u2663"]; // spade heart diamond club
  const KINDS = new Set(["JK", "2", "R3", "B3", "4", "5", "6", "7", "8", "9", "T", "J", "Q", "K", "A"]);

  // Markup built by html`...`: the only values setHtml and html`...` take unescaped.
  class Html {
    constructor(text) { this.text = text; }
    toString() { return this.text; }
  }

  function esc(text) {
    return String(text).replace(/[&<>"'`]/g, (c) => ({
      "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;", "`": "&#96;",
    }[c]));
  }

  function piece(value) {
    if (value instanceof Html) return value.text;
    if (Array.isArray(value)) return value.map(piece).join("");
    if (value === null || value === undefined || value === false) return "";
    return esc(value);
  }

  // html`<b>${name}</b>`: the template's own markup kept, every ${value} escaped (lists joined).
  // Parts are joined by nesting (html`${a}${b}`), never with +, which would turn them into text.
  function html(strings, ...values) {
    let out = strings[0];
    values.forEach((v, i) => { out += piece(v) + strings[i + 1]; });
    return new Html(out);
  }

  // The one way markup enters the page: html`...` as markup, anything else as escaped text.
  function setHtml(element, markup) {
    element.innerHTML = markup instanceof Html ? markup.text : esc(markup === undefined || markup === null ? "" : markup);
  }

  // Draw one part of a page with build(); a part that cannot be drawn says so (naming `what` it is
  // part of), and the others are still drawn.
  function drawPart(element, build, what) {
    try {
      setHtml(element, build());
    } catch (err) {
      console.warn(`#${element.id} not drawn`, err);
      setHtml(element, html`<span class="note">(this part of the ${what} cannot be shown)</span>`);
    }
  }

  // Values of an answer, checked: an integer or "?", a text, a list (never throws).
  const int = (v) => (Number.isInteger(v) ? v : "?");
  const text = (v) => (typeof v === "string" ? v : v === null || v === undefined ? "" : String(v));
  const list = (v) => (Array.isArray(v) ? v : []);

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

  function cardBack(cls) {
    const w = 60, h = 84;
    return html`<svg class="${cls} back" viewBox="0 0 ${w} ${h}" role="img" aria-label="card back">
      <rect x="1" y="1" width="${w - 2}" height="${h - 2}" rx="6" fill="#27407a" stroke="#fff" stroke-width="2"/>
      <rect x="6" y="6" width="${w - 12}" height="${h - 12}" rx="4" fill="none" stroke="#8fa8e0" stroke-width="1.5"/>
      <path d="M${w / 2} 18 L${w - 14} ${h / 2} L${w / 2} ${h - 18} L14 ${h / 2} Z" fill="#8fa8e0" opacity="0.6"/></svg>`;
  }

  // One card as html`<svg>`. opts: {back, small, selected, index, extra (class names), tabindex}
  function cardSvg(kind, opts = {}) {
    const w = 60, h = 84;
    const cls = ["card"];
    if (opts.small) cls.push("small");
    if (opts.selected) cls.push("selected");
    if (opts.extra) cls.push(opts.extra);
    if (opts.back) return cardBack(cls.join(" "));
    const name = text(kind);
    const suit = suitOf(name, opts.index || 0);
    const red = name === "R3" || suit === SUITS[1] || suit === SUITS[2];
    const colour = name === "JK" ? "#7a2ea0" : red ? "#c8102e" : "#111";
    const wild = name === "JK" || name === "2";
    const label = KINDS.has(name) ? rankLabel(name) : "?";
    const centre = name === "JK"
      ? html`<text x="${w / 2}" y="${h / 2 + 4}" font-size="13" text-anchor="middle" font-weight="700" fill="${colour}">JOKER</text>`
      : html`<text x="${w / 2}" y="${h / 2 + 12}" font-size="30" text-anchor="middle" fill="${colour}">${suit}</text>`;
    return html`<svg class="${cls.join(" ")}" viewBox="0 0 ${w} ${h}" ${opts.tabindex ? html`tabindex="0"` : ""} data-kind="${name}" role="img" aria-label="${name}">
      <rect x="1" y="1" width="${w - 2}" height="${h - 2}" rx="6" fill="${wild ? "#fff8e1" : "#fff"}" stroke="#333" stroke-width="1.5"/>
      <text x="6" y="19" font-size="16" font-weight="700" fill="${colour}">${label}</text>
      <text x="7" y="33" font-size="12" fill="${colour}">${suit}</text>${centre}
      <text x="${w - 6}" y="${h - 8}" font-size="16" font-weight="700" text-anchor="end" fill="${colour}">${label}</text></svg>`;
  }

  // A row of cards (kind names) as html; the same kinds share a position-based suit cycle.
  function cardRow(kinds, opts = {}) {
    const seen = {};
    return html`${list(kinds).map((k) => {
      const key = text(k);
      seen[key] = (seen[key] || 0) + 1;
      return cardSvg(key, { ...opts, index: seen[key] - 1 });
    })}`;
  }

  // fetch(url, init) and its answer: {status, data} with data the JSON object of a 2xx answer, else an
  // Error of one line with its status and busy flag: the answer's own {"error"}, or, for a body that
  // is not a JSON object (a proxy's page, a plain-text refusal), the status and its reason instead
  // of a parse error or a table drawn from nothing; a server out of reach says so.
  async function request(url, init) {
    let r;
    try {
      r = await fetch(url, init);
    } catch (_) {
      const gone = new Error("the server cannot be reached (is canasta serve still running?)");
      throw Object.assign(gone, { status: 0, busy: false });
    }
    return { status: r.status, data: await answer(r) };
  }

  async function answer(r) {
    const body = await r.json().catch(() => null);
    const data = body && typeof body === "object" && !Array.isArray(body) ? body : null;
    if (r.ok && data) return data;
    const said = data && typeof data.error === "string" ? data.error.split("\n")[0].trim() : "";
    const reason = r.statusText ? ` ${r.statusText}` : "";
    const why = said || `the server answered HTTP ${r.status}${reason} without a readable message`;
    throw Object.assign(new Error(why), { status: r.status, busy: Boolean(data && data.busy === true) });
  }

  window.Cards = { esc, html, setHtml, drawPart, Html, int, text, list, cardSvg, cardRow, request };
})();
