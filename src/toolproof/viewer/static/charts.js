// Small SVG charts for the run page: bars with confidence whiskers and histograms.
"use strict";

const Charts = (() => {
  const NS = "http://www.w3.org/2000/svg";
  function s(tag, attrs, text) {
    const el = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
    if (text !== undefined) el.textContent = text;
    return el;
  }

  function frame(title, note) {
    const box = TP.h("div", {class: "chart"}, TP.h("h3", {}, title));
    if (note) box.appendChild(TP.h("div", {class: "muted"}, note));
    return box;
  }

  const CHAR = 7.4;  // width of one 12px character, a little generous so nothing is cut
  const WIDTH = 440;   // one width for every chart, so the text is one size everywhere

  /** Horizontal bars; items: {label, value, low?, high?, note?, cls?}; max: axis maximum.
   * The label and value columns are as wide as their longest text (within limits), so no
   * text is clipped; a label too long for its column is shortened with an ellipsis and
   * shown whole on hover. */
  function bars(title, items, {max = 1, format = TP.pct, note} = {}) {
    const box = frame(title, note);
    const values = items.map((item) => format(item.value) + (item.note ? ` ${item.note}` : ""));
    const longest = Math.max(4, ...items.map((item) => String(item.label).length));
    const left = Math.min(190, 12 + CHAR * longest);
    const fits = Math.floor((left - 12) / CHAR);
    const short = (label) => label.length > fits ? label.slice(0, fits - 1) + "…" : label;
    const right = Math.min(150, 12 + CHAR * Math.max(4, ...values.map((v) => v.length)));
    const row = 24, width = WIDTH, plot = width - left - right;
    const svg = s("svg", {viewBox: `0 0 ${width} ${row * items.length + 8}`, role: "img",
      "aria-label": title});
    const scale = (v) => left + plot * (max ? Math.min(1, Math.max(0, v) / max) : 0);
    items.forEach((item, i) => {
      const y = 4 + i * row;
      const label = String(item.label);
      const text = s("text", {x: left - 6, y: y + 14, "text-anchor": "end", class: "label"}, short(label));
      text.appendChild(s("title", {}, label));
      svg.appendChild(text);
      svg.appendChild(s("rect", {x: left, y: y + 3, width: Math.max(1, scale(item.value) - left),
        height: row - 8, class: `bar ${item.cls || ""}`, rx: 2}));
      if (item.low !== undefined && item.high !== undefined) {
        const cy = y + row / 2;
        svg.appendChild(s("line", {x1: scale(item.low), x2: scale(item.high), y1: cy, y2: cy, class: "whisker"}));
        for (const v of [item.low, item.high]) {
          svg.appendChild(s("line", {x1: scale(v), x2: scale(v), y1: cy - 4, y2: cy + 4, class: "whisker"}));
        }
      }
      svg.appendChild(s("text", {x: left + plot + 8, y: y + 14, class: "value"}, values[i]));
    });
    box.appendChild(svg);
    return box;
  }

  /** A histogram from {edges, counts, median, p95}. */
  function histogram(title, hist, format = (x) => TP.num(x, 2)) {
    const note = hist.n ? `median ${format(hist.median)} · p95 ${format(hist.p95)} · n ${TP.num(hist.n)}` : "no data";
    const box = frame(title, note);
    if (!hist.n) return box;
    const width = 440, height = 130, pad = 20;
    const svg = s("svg", {viewBox: `0 0 ${width} ${height + pad}`, role: "img", "aria-label": title});
    const top = Math.max(...hist.counts);
    const w = (width - 20) / hist.counts.length;
    hist.counts.forEach((c, i) => {
      const bh = top ? (height - 14) * c / top : 0;
      const rect = s("rect", {x: 10 + i * w + 1, y: height - bh, width: Math.max(1, w - 2), height: bh, class: "bar"});
      const range = hist.discrete ? format(hist.edges[i] + 0.5) : `${format(hist.edges[i])} – ${format(hist.edges[i + 1])}`;
      rect.appendChild(s("title", {}, `${range}: ${c}`));
      svg.appendChild(rect);
    });
    if (hist.discrete) {
      const step = Math.ceil(hist.counts.length / 12);
      hist.counts.forEach((c, i) => {
        if (i % step) return;
        svg.appendChild(s("text", {x: 10 + (i + 0.5) * w, y: height + 16, "text-anchor": "middle",
          class: "muted"}, format(hist.edges[i] + 0.5)));
      });
    } else {
      svg.appendChild(s("text", {x: 10, y: height + 16, class: "muted"}, format(hist.edges[0])));
      svg.appendChild(s("text", {x: width - 10, y: height + 16, "text-anchor": "end", class: "muted"},
        format(hist.edges[hist.edges.length - 1])));
    }
    box.appendChild(svg);
    return box;
  }

  return {bars, histogram};
})();
