{# The replay viewer's renderers, one per game (included inside replay_viewer.html's script):
   each has draw(svg, snapshot, frame, i) returning the height it used (or picture(div, ...)),
   hand(cell, hand, size), describe(event) -> [words, scores points?], and ended(prev, frame):
   the table as a move that ends a hand, deal or round left it (the engine deals the next one in
   the same move), or null. #}
// each seat's colour (as the report's charts): who laid a tile, made a play, discarded a set
const SEAT_COLORS = ["#3a6fd8", "#d8563a", "#2f9e5b", "#9a55c9", "#c99a1f", "#1f9fb0", "#b0386d", "#5b6b7f"];
function seatColor(seat) { return SEAT_COLORS[seat % SEAT_COLORS.length]; }

// ---- dominoes -------------------------------------------------------------------------------
const PIPS = {0: [], 1: [[.5, .5]], 2: [[.27, .27], [.73, .73]], 3: [[.27, .27], [.5, .5], [.73, .73]],
  4: [[.27, .27], [.73, .27], [.27, .73], [.73, .73]], 5: [[.27, .27], [.73, .27], [.5, .5], [.27, .73], [.73, .73]],
  6: [[.27, .25], [.73, .25], [.27, .5], [.73, .5], [.27, .75], [.73, .75]]};
function half(g, x, y, u, v, cls) {
  const part = el("g", {class: "half " + (cls || ""), "data-v": v});
  part.appendChild(el("rect", {x, y, width: u, height: u, fill: "none", stroke: "none"}));
  for (const [px, py] of PIPS[v] || []) part.appendChild(el("circle", {cx: x + px * u, cy: y + py * u, r: u * 0.09, fill: "#1d2330"}));
  g.appendChild(part);
}
// A tile with `first` on its left (top when vertical) half and `second` on its right (bottom).
function domino(svg, x, y, u, first, second, vertical, opts) {
  const o = opts || {}, w = vertical ? u : 2 * u, hh = vertical ? 2 * u : u;
  const g = el("g", {class: "domino" + (o.cls ? " " + o.cls : ""), "data-tile": first + "-" + second});
  g.appendChild(el("title", {}, first + "-" + second));
  g.appendChild(el("rect", {x: x + 0.5, y: y + 0.5, width: w - 1, height: hh - 1, rx: u * 0.16,
    fill: o.fill || "#fffdf6", stroke: o.stroke || "#1d2330", "stroke-width": o.strokeWidth || 1}));
  if (vertical) g.appendChild(el("line", {x1: x + 3, x2: x + u - 3, y1: y + u, y2: y + u, stroke: "#9aa3b2"}));
  else g.appendChild(el("line", {x1: x + u, x2: x + u, y1: y + 3, y2: y + u - 3, stroke: "#9aa3b2"}));
  half(g, x, y, u, first, "a");
  half(g, vertical ? x : x + u, vertical ? y + u : y, u, second, "b");
  svg.appendChild(g);
  return g;
}
function tileBack(svg, x, y, u) {
  svg.appendChild(el("rect", {x: x + 0.5, y: y + 0.5, width: 2 * u - 1, height: u - 1, rx: u * 0.16, fill: "#5b6b7f", stroke: "#1d2330"}));
}
function lineCount(line) {  // rule 8: each open end, a double at an end twice; a lone tile both halves once
  if (!line.length) return {count: 0, parts: []};
  if (line.length === 1) return {count: line[0][0] + line[0][1], parts: [line[0][0], line[0][1]]};
  const a = line[0], b = line[line.length - 1];
  const l = a[0] === a[1] ? 2 * a[0] : a[0], r = b[0] === b[1] ? 2 * b[1] : b[1];
  return {count: l + r, parts: [a[0] === a[1] ? "2×" + a[0] : a[0], b[0] === b[1] ? "2×" + b[1] : b[1]]};
}
function laid(line, e) {  // the line after the play event e (the engine deals the next hand at once)
  const t = e.tile;
  if (!line.length || !e.end) return [t.slice()];
  if (e.end === "left") { const v = line[0][0]; return [t[1] === v ? [t[0], t[1]] : [t[1], t[0]], ...line]; }
  const v = line[line.length - 1][1];
  return [...line, t[0] === v ? [t[0], t[1]] : [t[1], t[0]]];
}
// who laid each tile of the line at each frame (a move that ends a hand keeps that hand's)
const laidBy = data.game !== "dominoes" ? [] : (() => {
  const out = []; let by = {};
  for (const f of frames) {
    let shown = null;
    for (const e of f.events) {
      if (e.type === "hand_start") by = {};
      else if (e.type === "play") by[Math.max(...e.tile) + "-" + Math.min(...e.tile)] = e.seat;
      else if (e.type === "hand_end") shown = {...by};
    }
    out.push(shown || {...by});
  }
  return out;
})();
const dominoes = {
  // the table as a hand-ending move left it (the engine deals the next hand in the same move):
  // the line as it ended, and every hand's tiles, shown to everyone at a hand's end
  ended(prev, f) {
    const end = f.events.find(e => e.type === "hand_end");
    if (!end) return null;
    const play = f.events.find(e => e.type === "play");
    return {...prev, line: play ? laid(prev.line, play) : prev.line, hands: end.hands, scores: end.scores,
            _ended: end, _public: true};
  },
  draw(svg, s, f, i) {
    const line = s.line, u = 26, gap = 3, margin = 14, rowH = 2 * u + 28;  // room for the end labels
    const t = {play: f.events.find(e => e.type === "play"), hand: s.hand_number, graveyard: s.graveyard.length, handEnd: s._ended};
    const {count, parts} = lineCount(line);
    const top = 50;
    // the header: the hand, the count (the number All-Fives scores on) and this move's points
    svg.appendChild(el("text", {x: margin, y: 22, "font-size": 13, fill: "#667085"},
      "hand " + t.hand + " · graveyard " + plural(t.graveyard, "tile") + (t.handEnd ? " · the hand is over" : "")));
    const countText = line.length ? "count " + count + (line.length > 1 ? " = " + parts.join(" + ") : "") : "the line is empty";
    svg.appendChild(el("text", {x: margin, y: 42, "font-size": 17, "font-weight": 700, id: "count", "data-count": count}, countText));
    if (t.play) {
      const p = t.play.points;
      svg.appendChild(el("text", {x: WIDTH - margin, y: 42, "font-size": 16, "font-weight": 700, "text-anchor": "end",
        fill: p > 0 ? "#11602a" : "#667085", id: "move-points", "data-points": p},
        "seat " + t.play.seat + " " + (p > 0 ? "+" + p + " points" : "scores nothing")));
    }
    // the snake: rows alternate direction; on a right-to-left row each tile is drawn reversed
    // so that touching halves show the same number; doubles lie crosswise
    const widthOf = tile => (tile[0] === tile[1] ? u : 2 * u) + gap;
    const rows = [[]]; let used = 0;
    for (let k = 0; k < line.length; k++) {
      const w = widthOf(line[k]);
      if (used + w > WIDTH - 2 * margin && rows[rows.length - 1].length) { rows.push([]); used = 0; }
      rows[rows.length - 1].push(k); used += w;
    }
    const lastPlayed = t.play && line.length ? (t.play.end === "left" ? 0 : line.length - 1) : -1;
    let prevEnd = null;
    rows.forEach((ks, r) => {
      const rtl = r % 2 === 1, y0 = top + r * rowH;
      let x = rtl ? WIDTH - margin : margin;
      ks.forEach((k, j) => {
        const tile = line[k], dbl = tile[0] === tile[1], w = dbl ? u : 2 * u;
        if (rtl) x -= w;
        const y = dbl ? y0 : y0 + u / 2;
        const opts = {cls: "row-" + r};
        if (k === lastPlayed) { opts.fill = "#ffe9a8"; opts.stroke = "#b7791f"; opts.strokeWidth = 2; }
        const g = domino(svg, x, y, u, rtl ? tile[1] : tile[0], rtl ? tile[0] : tile[1], dbl, opts);
        g.setAttribute("data-row", r); g.setAttribute("data-k", k);
        const by = laidBy[i][Math.max(...tile) + "-" + Math.min(...tile)];
        if (by !== undefined) {  // a bar under the tile in the colour of the seat that laid it
          svg.appendChild(el("rect", {x: x + 4, y: y + (dbl ? 2 * u : u) + 2, width: w - 8, height: 3, rx: 1.5, fill: seatColor(by),
            class: "laid-by", "data-seat": by}));
          g.querySelector("title").textContent += ", laid by seat " + by; g.setAttribute("data-laid-by", by);
        }
        if (j === 0 && prevEnd) {  // the snake turns: join this row's first tile to the last row's end
          const cx = rtl ? Math.max(prevEnd.x, x + w) : Math.min(prevEnd.x, x);
          const side = rtl ? 1 : -1, bend = cx + side * 10;
          svg.appendChild(el("path", {d: `M ${prevEnd.x} ${prevEnd.y} C ${bend} ${prevEnd.y} ${bend} ${y0 + u} ${rtl ? x + w : x} ${y0 + u}`,
            fill: "none", stroke: "#9aa3b2", "stroke-width": 2, "stroke-dasharray": "3 3"}));
        }
        if (j === ks.length - 1) prevEnd = {x: rtl ? x : x + w, y: y0 + u};
        if (!rtl) x += w + gap; else x -= gap;
      });
    });
    // the open ends, named
    if (line.length) {
      const ends = svg.querySelectorAll("g.domino");
      const first = ends[0], last = ends[ends.length - 1];
      const mark = (g, label) => { const b = g.getBBox(); svg.appendChild(el("text", {x: Math.max(44, Math.min(WIDTH - 44, b.x + b.width / 2)), y: b.y + b.height + 17,
        "font-size": 11, "text-anchor": "middle", fill: "#2855c5"}, label)); };
      if (first === last) mark(first, "ends " + line[0][0] + " and " + line[0][1]);
      else { mark(first, "left end " + line[0][0]); mark(last, "right end " + line[line.length - 1][1]); }
    }
    return line.length ? top + rows.length * rowH + 6 : top;
  },
  hand(cell, hand, size) {
    const u = 16, n = hand ? hand.length : size;
    const svg = el("svg", {width: Math.max(1, n * (2 * u + 3)), height: u + 2, viewBox: `0 0 ${Math.max(1, n * (2 * u + 3))} ${u + 2}`});
    for (let k = 0; k < n; k++) {
      if (hand) domino(svg, k * (2 * u + 3), 1, u, hand[k][0], hand[k][1], false);
      else tileBack(svg, k * (2 * u + 3), 1, u);
    }
    cell.appendChild(svg);
    if (!n) cell.appendChild(h("span", "(empty)", "note"));
  },
  describe(e) {
    const tile = x => x[0] + "-" + x[1];
    switch (e.type) {
      case "hand_start": return ["Hand " + e.hand + ": " + who(e.leader) + " leads" + (e.lead_tile ? " " + tile(e.lead_tile) : "") +
                                 (e.graveyard ? " · graveyard " + e.graveyard : ""), false];
      case "redeal": return ["Redeal: " + e.seats.map(who).join(", ") + " dealt 5 or more doubles", false];
      case "play": return [who(e.seat) + (e.end ? " plays " + tile(e.tile) + " on the " + e.end : " leads " + tile(e.tile)) +
                           ": count " + e.count + ", " + points(e.points) + (e.points ? " (total " + e.score + ")" : ""), e.points > 0];
      case "draw": return [who(e.seat) + " cannot play and draws (graveyard " + e.graveyard + " left)", false];
      case "pass": return [who(e.seat) + " cannot play and passes", false];
      case "hand_end": {
        const pts = e.points.map((p, s) => p ? who(s) + " " + points(p) : null).filter(Boolean);
        const how = e.how === "domino" ? who(e.winner) + " plays his last tile (domino)"
          : "Blocked (pips " + e.pips.join(" / ") + ")" + (e.winner === null ? ": the lowest count is shared, nobody scores" : ": " + who(e.winner) + " has the lowest count");
        return ["Hand " + e.hand + " over: " + how + (pts.length ? "; " + pts.join(", ") : "") + "; scores " + e.scores.join(" – "), pts.length > 0];
      }
      case "playoff": return ["Tied at the target: " + e.tied.map(who).join(", ") + ": " + e.hands + " more hands", false];
      default: return null;
    }
  },
};

// ---- crisps ---------------------------------------------------------------------------------
function card(svg, x, y, label, o) {
  const opts = o || {}, w = opts.w || 34, hh = opts.h || 48;
  const g = el("g", {class: "card" + (opts.back ? " back" : ""), "data-card": opts.back ? "?" : label});
  g.appendChild(el("rect", {x: x + 0.5, y: y + 0.5, width: w - 1, height: hh - 1, rx: 4,
    fill: opts.back ? "#5b6b7f" : (opts.fill || "#fff"), stroke: opts.stroke || "#1d2330", "stroke-width": opts.sw || 1}));
  if (!opts.back) {
    g.appendChild(el("text", {x: x + w / 2, y: y + hh / 2 + (opts.small ? 4 : 6), "text-anchor": "middle",
      "font-size": opts.small ? 12 : 17, "font-weight": 700, fill: label === "Q" ? "#c62828" : "#1d2330"}, label));
  }
  svg.appendChild(g);
}
// the current trick (the climb) at each frame: the plays since the last lead. A pass ends the
// trick (two players: the other made the last play); it stays drawn until the next lead or take
const tricks = (() => {
  const out = []; let trick = [], closed = false;
  for (const f of frames) {
    let ended = null, shown = null;  // a move that ends the deal shows its last trick (the next deal starts at once)
    for (const e of f.events) {
      if (e.type === "deal" || e.type === "take") { trick = []; closed = false; }
      else if (e.type === "play") {
        if (closed) { trick = []; closed = false; }
        trick.push({seat: e.seat, cards: e.cards, kind: e.kind});
      } else if (e.type === "pass") { trick.push({seat: e.seat, pass: true}); closed = true; }
      else if (e.type === "deal_end") { ended = e; shown = trick.slice(); }
    }
    out.push({plays: shown || trick.slice(), ended});
  }
  return out;
})();
const crisps = {
  // the table as a deal-ending move left it (the engine deals the next deal in the same move)
  ended(prev, f) {
    const end = f.events.find(e => e.type === "deal_end");
    if (!end) return null;
    const hands = prev.hands.map(x => x.slice()), played = (prev.played || []).slice();
    let table = prev.table;
    for (const e of f.events.slice(0, f.events.indexOf(end))) {
      if (e.type !== "play") continue;
      for (const c of e.cards) { const k = hands[e.seat].indexOf(c); if (k >= 0) hands[e.seat].splice(k, 1); }
      played.push(...e.cards); table = {seat: e.seat, cards: e.cards};
    }
    return {...prev, hands, played, table, phase: "over", scores: end.scores, _ended: end};
  },
  draw(svg, s, f, i) {
    const t = tricks[i], margin = 14;
    svg.appendChild(el("text", {x: margin, y: 22, "font-size": 13, fill: "#667085"},
      "deal " + s.deal + " · phase " + s.phase + (s.phase === "take" ? " (the last player to play chooses the offer or a blind card)" : "")));
    svg.appendChild(el("text", {x: margin, y: 46, "font-size": 15, "font-weight": 700},
      t.ended ? "the deal is over: " + who(t.ended.winner) + " went out"
        : !t.plays.length ? "a new trick: " + who(s.current_player ?? 0) + " leads"
        : t.plays[t.plays.length - 1].pass ? "the trick is over: " + who(t.plays.length > 1 ? t.plays[t.plays.length - 2].seat : 0) + " made the last play"
        : "this trick (the climb): " + who(s.current_player ?? 0) + " to beat it or pass"));
    let x = margin, y = 58;
    t.plays.forEach((p, k) => {
      const w = Math.max(76, p.pass ? 44 : p.cards.length * 36 + 6);
      if (x + w > WIDTH - margin) { x = margin; y += 76; }
      svg.appendChild(el("text", {x, y: y + 10, "font-size": 11, fill: seatColor(p.seat)}, "seat " + p.seat + (p.kind ? " " + p.kind : "")));
      if (p.pass) svg.appendChild(el("text", {x, y: y + 44, "font-size": 14, fill: "#667085", "font-style": "italic"}, "pass"));
      else p.cards.forEach((c, j) => card(svg, x + j * 36, y + 16, c, k === t.plays.length - 1 ? {fill: "#ffe9a8", stroke: "#b7791f", sw: 2} : {}));
      x += w + 12;
    });
    y += t.plays.length ? 80 : 0;
    svg.appendChild(el("text", {x: margin, y: y + 14, "font-size": 12, fill: "#667085"}, "offer (face up)"));
    if (s.offer) card(svg, margin, y + 20, s.offer, {fill: "#eef6ff"});
    else svg.appendChild(el("text", {x: margin, y: y + 48, "font-size": 12}, "none"));
    svg.appendChild(el("text", {x: 120, y: y + 14, "font-size": 12, fill: "#667085"}, "blind deck: " + (s.deck || []).length));
    if ((s.deck || []).length) card(svg, 120, y + 20, "", {back: true});
    svg.appendChild(el("text", {x: 220, y: y + 14, "font-size": 12, fill: "#667085"}, "removed unseen: " + (s.removed || []).length));
    const played = s.played || [];
    svg.appendChild(el("text", {x: 360, y: y + 14, "font-size": 12, fill: "#667085"}, "played this deal (" + played.length + ")"));
    for (let k = 0; k < played.length; k += 14)
      svg.appendChild(el("text", {x: 360, y: y + 32 + 16 * (k / 14), "font-size": 12}, played.slice(k, k + 14).join(" ")));
    return y + 20 + 48 + Math.max(0, Math.ceil(played.length / 14) - 3) * 16 + 10;
  },
  hand(cell, hand, size) {
    const n = hand ? hand.length : size, w = 22, hh = 30;
    const svg = el("svg", {width: Math.max(1, n * (w + 2)), height: hh + 2});
    for (let k = 0; k < n; k++) card(svg, k * (w + 2), 1, hand ? hand[k] : "", {w, h: hh, small: true, back: !hand});
    cell.appendChild(svg);
    if (!n) cell.appendChild(h("span", "(empty)", "note"));
  },
  describe(e) {
    switch (e.type) {
      case "deal": return ["Deal " + e.deal + ": " + who(e.starter) + " starts; offer " + (e.offer ?? "none") + ", blind deck " + e.deck, false];
      case "play": return [who(e.seat) + " plays " + e.cards.join(" ") + " (" + e.kind + ")", false];
      case "pass": return [who(e.seat) + " passes" + (e.auto ? " (automatically)" : ""), false];
      case "take": return [who(e.seat) + (e.source === "offer" ? " takes the offer " + e.card : " takes a blind card"), false];
      case "offer": return [e.card === null ? "No new offer: the deck is empty" : "New offer: " + e.card, false];
      case "deal_end": return [who(e.winner) + " goes out and wins deal " + e.deal + ": scores " + e.scores.join(" – "), true];
      default: return null;
    }
  },
};

// ---- epizodiak ------------------------------------------------------------------------------
function numberTile(svg, x, y, v, o) {
  const opts = o || {}, s = opts.size || 30;
  const g = el("g", {class: "ntile", "data-v": opts.back ? "?" : v});
  g.appendChild(el("rect", {x: x + 0.5, y: y + 0.5, width: s - 1, height: s - 1, rx: 5, fill: opts.back ? "#5b6b7f" : (opts.fill || "#fffdf6"),
    stroke: opts.stroke || "#1d2330", "stroke-width": opts.sw || 1, "stroke-dasharray": opts.dash || ""}));
  if (!opts.back) g.appendChild(el("text", {x: x + s / 2, y: y + s / 2 + s * 0.19, "text-anchor": "middle", "font-size": s * 0.52,
    "font-weight": 700, fill: opts.color || "#1d2330"}, v));
  svg.appendChild(g);
}
const epizodiak = {
  // the table as a round-ending move left it (the engine deals the next round in the same move);
  // a move whose round ended through a contest or a pick-up is drawn as the engine left it
  ended(prev, f) {
    const end = f.events.find(e => e.type === "round_end");
    if (!end) return null;
    const before = f.events.slice(0, f.events.indexOf(end));
    if (before.some(e => !["place", "discard", "pass", "draw"].includes(e.type))) return null;
    let dial = prev.dial.slice();
    const hands = prev.hands.map(x => x.slice()), sets = prev.sets.map(x => x.slice());
    for (const e of before) {
      if (e.type === "place") {
        for (const v of e.tiles) { const k = hands[e.seat].indexOf(v); if (k >= 0) hands[e.seat].splice(k, 1); }
        dial = e.end === "cw" ? [...dial, ...e.tiles] : [...e.tiles.slice().reverse(), ...dial];
      } else if (e.type === "discard") {
        hands[e.seat] = hands[e.seat].filter(v => v !== e.value); sets[e.seat].push(e.value);
      }
    }
    return {...prev, dial, hands, sets, phase: "over", scores: end.scores, _ended: end};
  },
  draw(svg, s, f) {
    const dial = s.dial || [], cx = 200, cy = 165, R = 125;
    const placed = new Set(f.events.filter(e => e.type === "place").flatMap(e => e.tiles));
    svg.appendChild(el("circle", {cx, cy, r: R, fill: "none", stroke: "#d9dde5", "stroke-width": 34}));
    for (let v = 1; v <= 12; v++) {
      const a = (v - 1) * Math.PI / 6 - Math.PI / 2, x = cx + R * Math.cos(a), y = cy + R * Math.sin(a);
      const on = dial.includes(v), end = on && (v === dial[0] || v === dial[dial.length - 1]);
      numberTile(svg, x - 17, y - 17, v, {size: 34, fill: !on ? "#fff" : placed.has(v) ? "#ffe9a8" : end ? "#2855c5" : "#6f8fe0",
        stroke: on ? "#1d2330" : "#b8bfcc", dash: on ? "" : "3 3", color: !on ? "#b8bfcc" : placed.has(v) ? "#1d2330" : "#fff"});
      if (end) svg.appendChild(el("text", {x: cx + (R - 42) * Math.cos(a), y: cy + (R - 42) * Math.sin(a) + 4, "text-anchor": "middle",
        "font-size": 11, fill: "#2855c5"}, v === dial[0] && v === dial[dial.length - 1] ? "both ends" : v === dial[0] ? "ccw end" : "cw end"));
    }
    svg.appendChild(el("text", {x: cx, y: cy - 6, "text-anchor": "middle", "font-size": 15, "font-weight": 700}, "pile " + (s.pile || []).length));
    svg.appendChild(el("text", {x: cx, y: cy + 14, "text-anchor": "middle", "font-size": 12, fill: "#667085"},
      "round " + s.round + " · " + s.phase + " · passes " + (s.passes ?? 0)));
    if (s._ended) svg.appendChild(el("text", {x: cx, y: cy + 34, "text-anchor": "middle", "font-size": 13, "font-weight": 700,
      fill: "#11602a"}, "round over: points " + s._ended.points.join(" / ")));
    // right of the dial: the sets each seat discarded this round (contested ones starred)
    const x0 = 395;
    svg.appendChild(el("text", {x: x0, y: 30, "font-size": 13, "font-weight": 700}, "sets discarded this round"));
    (s.sets || []).forEach((xs, seat) => {
      const y = 50 + seat * 56;
      svg.appendChild(el("text", {x: x0, y: y + 8, "font-size": 12, fill: seatColor(seat)}, who(seat)));
      if (!xs.length) svg.appendChild(el("text", {x: x0, y: y + 32, "font-size": 12, fill: "#667085"}, "–"));
      xs.forEach((v, k) => numberTile(svg, x0 + k * 26, y + 14, v, {size: 24, fill: (s.contested[seat] || []).includes(v) ? "#fde2e1" : "#fffdf6"}));
    });
    if (s.last_laid) svg.appendChild(el("text", {x: x0, y: 50 + nSeats * 56 + 10, "font-size": 12, fill: "#667085"},
      "may be picked up: " + s.last_laid.value + " (" + s.last_laid.end + " end, laid by seat " + s.last_laid.seat + ")"));
    return 2 * cy + 4;
  },
  hand(cell, hand, size) {
    const n = hand ? hand.length : size, s = 22;
    const svg = el("svg", {width: Math.max(1, n * (s + 2)), height: s + 2});
    for (let k = 0; k < n; k++) numberTile(svg, k * (s + 2), 1, hand ? hand[k] : "", {size: s, back: !hand});
    cell.appendChild(svg);
    if (!n) cell.appendChild(h("span", "(empty)", "note"));
  },
  describe(e) {
    switch (e.type) {
      case "round_start": return ["Round " + e.round + ": " + who(e.first) + " starts; the dial turns up " + e.dial + ", pile " + e.pile, false];
      case "draw": return [who(e.seat) + " draws (pile " + e.pile + " left)", false];
      case "place": return [who(e.seat) + " places " + e.tiles.join(" ") + " on the " + e.end + " end" + (e.auto ? " (automatically)" : ""), false];
      case "discard": return [who(e.seat) + " discards a set of " + e.value + "s", false];
      case "pickup": return [who(e.seat) + " picks up the " + e.value + " from the " + e.end + " end", false];
      case "pass": return [who(e.seat) + " passes" + (e.auto ? " (nothing to do under forced play)" : ""), false];
      case "contest": return [who(e.seat) + " contests the " + e.value + "s, taking " + e.taken.map((n, s) => n ? n + " from seat " + s : null).filter(Boolean).join(", "), false];
      case "refill": return ["The dial filled by " + who(e.seat) + " is refilled: turned up " + e.dial + ", pile " + e.pile, false];
      case "round_end": return ["Round " + e.round + " over" + (e.emptied !== null && e.emptied !== undefined ? " (" + who(e.emptied) + " emptied his hand)" : "") +
        ": " + e.points.map((p, s) => "seat " + s + " " + plural(p, "point")).join(", ") + "; scores " + e.scores.join(" – "), e.points.some(p => p > 0)];
      default: return null;
    }
  },
};

// ---- any other game (a plug-in): the position as its engine's text, a seat's view as its
// observation written out, events as readable text ---------------------------------------------
function readable(v, pad) {
  pad = pad || "";
  if (v === null || typeof v !== "object") return String(v);
  if (Array.isArray(v)) {
    if (v.every(x => x === null || typeof x !== "object")) return v.length ? v.join(" ") : "–";
    return v.map(x => "\n" + pad + "- " + readable(x, pad + "  ")).join("");
  }
  return Object.entries(v).map(([k, x]) => "\n" + pad + k + ": " + readable(x, pad + "  ")).join("");
}
const generic = {
  ended() { return null; },
  picture(pic, s, f, seat) {
    let text;
    if (seat < 0) text = f.text || readable(s).trimStart();
    else {
      const ref = f.views[seat], o = ref === null || ref === undefined ? null : data.observations[String(ref)];
      text = o ? readable(o).trimStart() : "seat " + seat + " has not been asked anything yet";
    }
    pic.appendChild(h("pre", text, "position"));
  },
  hand(cell, hand, size) { cell.textContent = hand ? hand.map(x => Array.isArray(x) ? x.join("-") : String(x)).join(" ") : size + " hidden"; },
  describe(e) {
    const rest = Object.entries(e).filter(([k]) => k !== "type");
    return [(e.type ?? "event") + (rest.length ? ": " + rest.map(([k, x]) => k + " " + (x !== null && typeof x === "object" ? readable(x).trim() : x)).join(", ") : ""), false];
  },
};
