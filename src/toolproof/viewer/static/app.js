// toolproof viewer: shared helpers. Every piece of run data reaches the page as text
// (textContent / attributes), never as HTML: agent output is untrusted.
"use strict";

const TP = (() => {
  /** Build an element: h("a", {href: "/x", class: "c"}, "text", child). */
  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (name.startsWith("on")) el.addEventListener(name.slice(2), value);
      else if (name === "class") el.className = value;
      else el.setAttribute(name, value === true ? "" : String(value));
    }
    append(el, children);
    return el;
  }

  function append(el, children) {
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false) continue;
      el.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return el;
  }

  function clear(el, ...children) {
    el.replaceChildren();
    return append(el, children);
  }

  async function api(path, params) {
    const query = params ? "?" + new URLSearchParams(params).toString() : "";
    const response = await fetch(path + query, {headers: {Accept: "application/json"}});
    const data = await response.json();
    if (!response.ok) throw new Error(data.error || response.statusText);
    return data;
  }

  const enc = encodeURIComponent;
  const runUrl = (run) => `/runs/${enc(run)}`;
  const episodeUrl = (run, key) => `/runs/${enc(run)}/episodes/${enc(key)}`;

  function pct(x, digits = 1) { return x === null || x === undefined ? "–" : `${(100 * x).toFixed(digits)}%`; }
  function num(x, digits = 0) {
    if (x === null || x === undefined) return "–";
    return Number(x).toLocaleString("en-US", {maximumFractionDigits: digits, minimumFractionDigits: 0});
  }
  function secs(x) {
    if (x === null || x === undefined) return "–";
    if (x < 1) return `${(1000 * x).toFixed(x < 0.01 ? 1 : 0)} ms`;
    return x < 120 ? `${x.toFixed(2)} s` : `${(x / 60).toFixed(1)} min`;
  }
  function usd(x) { return x === null || x === undefined ? "–" : `$${x < 1 ? x.toFixed(4) : x.toFixed(2)}`; }
  function date(text) {
    if (!text) return "–";
    const d = new Date(text);
    return isNaN(d) ? String(text) : d.toISOString().slice(0, 16).replace("T", " ");
  }
  function ci(p) { return p ? `${pct(p.ci_low)}–${pct(p.ci_high)}` : ""; }
  function json(value) { return JSON.stringify(value, null, 2); }

  function levelBadge(level) { return h("span", {class: `badge ${level}`}, level); }
  function passBadge(passed) {
    return h("span", {class: `badge ${passed ? "pass" : "fail"}`}, passed ? "passed" : "failed");
  }

  function card(label, value, sub) {
    return h("div", {class: "card"}, h("div", {class: "label"}, label),
      h("div", {class: "value"}, value), sub ? h("div", {class: "sub"}, sub) : null);
  }

  function status(text) { clear(document.getElementById("status"), text || ""); }

  function fail(error) {
    console.error(error);
    const main = document.getElementById("main");
    main.prepend(h("p", {class: "error", role: "alert"}, String(error.message || error)));
  }

  return {h, append, clear, api, enc, runUrl, episodeUrl, pct, num, secs, usd, date, ci, json,
    levelBadge, passBadge, card, status, fail};
})();
