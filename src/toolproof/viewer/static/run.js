// One run: headline cards, charts, and the server-paged episode table.
"use strict";

(() => {
  const {h, clear, api, pct, num, secs, usd} = TP;
  const run = document.getElementById("main").dataset.run;
  const FILTERS = ["q", "passed", "level", "category", "type", "difficulty", "termination", "failure_mode"];
  const COLUMNS = [
    ["task_id", "Episode"], ["passed", "Result"], ["level", "Level"], ["termination", "Termination"],
    ["failure_mode", "Failure mode"], ["category", "Category"], ["type", "Type"],
    ["difficulty", "Diff.", true], ["n_steps", "Steps", true], ["n_tool_calls", "Calls", true],
    ["duration_s", "Duration", true], ["input_tokens", "Tokens", true], ["cost_usd", "Cost", true],
  ];
  const LEVELS = ["perfect", "acceptable", "partial", "fail"];
  const MAX_GROUPS = 16;
  const POLL_MS = Number(document.getElementById("main").dataset.poll || 3000);
  const state = Object.fromEntries(new URLSearchParams(location.search));
  state.limit = state.limit || "50";
  const form = document.getElementById("filters");
  const table = document.getElementById("episodes");
  let request = 0;

  // ---- overview ----------------------------------------------------------------
  function levels(o) {
    const given = o.levels || {};
    const names = [...LEVELS, ...Object.keys(given).filter((k) => !LEVELS.includes(k))];
    return names.map((k) => [k, given[k] || 0]);
  }

  function cards(o) {
    const s = o.success, e = o.episodes, t = o.totals;
    const d = o.distributions;
    clear(document.getElementById("cards"),
      TP.card("Success", s.n ? pct(s.rate) : "–", s.n ? `95% CI ${TP.ci(s)} · ${s.successes}/${s.n}` : "no episode scored"),
      TP.card("Episodes", `${num(e.finished)}/${num(e.planned)}`,
        `${e.infra_errors ? e.infra_errors + " infra errors excluded" : "no infra errors"}${e.complete ? "" : " · unfinished"}`),
      TP.card("Perfect", num((o.levels || {}).perfect || 0),
        levels(o).filter(([, v]) => v).map(([k, v]) => `${k} ${v}`).join(" · ")),
      TP.card("Duration", secs(d.duration_s.median), `median · p95 ${secs(d.duration_s.p95)}`),
      TP.card("Tokens", num(t.input_tokens + t.output_tokens), `in ${num(t.input_tokens)} · out ${num(t.output_tokens)}`),
      TP.card("Cost", usd(t.cost_usd), t.cost_usd === null ? "not priced" : `${usd(t.cost_usd / Math.max(1, e.finished))} per episode`));
  }

  function charts(o) {
    const box = clear(document.getElementById("charts"));
    const dims = Object.keys(o.breakdowns);
    const first = ["category", "type", "difficulty"].filter((d) => dims.includes(d));
    for (const dim of [...first, ...dims.filter((d) => !first.includes(d))]) {
      let groups = o.breakdowns[dim];
      let note = "bars: success rate · whiskers: 95% CI";
      if (groups.length > MAX_GROUPS) {
        note = `the ${MAX_GROUPS} largest of ${groups.length} groups · ${note}`;
        groups = [...groups].sort((a, b) => b.n - a.n).slice(0, MAX_GROUPS);
      }
      box.appendChild(Charts.bars(`Success by ${dim}`, groups.map((g) => ({
        label: g.key, value: g.rate, low: g.ci_low, high: g.ci_high, note: `(${g.successes}/${g.n})`,
      })), {note}));
    }
    const counts = levels(o);
    const n = counts.reduce((a, [, v]) => a + v, 0) || 1;
    const levelCls = {perfect: "pass", acceptable: "pass", partial: "partial", fail: "fail"};
    box.appendChild(Charts.bars("Levels", counts.map(([k, v]) => ({label: k, value: v / n, note: `(${v})`, cls: levelCls[k]}))));
    const terms = Object.entries(o.terminations);
    const total = terms.reduce((a, [, v]) => a + v, 0) || 1;
    box.appendChild(Charts.bars("Terminations", terms.map(([k, v]) => ({label: k, value: v / total, note: `(${v})`}))));
    const d = o.distributions;
    box.appendChild(Charts.histogram("Steps per episode", d.steps, (x) => num(x, 1)));
    box.appendChild(Charts.histogram("Episode duration", d.duration_s, secs));
    box.appendChild(Charts.histogram("Tokens per episode", d.tokens, (x) => num(x)));
    if (d.cost_usd.n) box.appendChild(Charts.histogram("Cost per episode", d.cost_usd, usd));
  }

  function failures(o) {
    const modes = Object.entries(o.failure_modes);
    const box = clear(document.getElementById("failures"));
    if (!modes.length) return;
    box.append(h("h2", {}, "Failure modes"), h("table", {class: "grid", id: "modes"}, h("tbody", {},
      modes.map(([mode, count]) => h("tr", {},
        h("td", {}, h("a", {href: "#", onclick: (ev) => { ev.preventDefault(); setFilters({passed: "0", failure_mode: mode === "unclassified" ? "none" : mode}); }}, mode)),
        h("td", {class: "num"}, num(count)))))));
  }

  function extras(o) {
    const box = clear(document.getElementById("extras"));
    if (!o.extras.length) return;
    const sections = new Map();
    for (const [name, value] of o.extras) {
      const [head, ...rest] = name.split(".");
      if (!sections.has(head)) sections.set(head, []);
      sections.get(head).push([rest.join(".") || head, value]);
    }
    const show = (value) => typeof value === "object"
      ? `${pct(value.rate)} (${pct(value.ci_low)}–${pct(value.ci_high)})` : num(value, 4);
    const cards = [...sections].map(([head, rows]) => h("div", {class: "card"}, h("h3", {}, head),
      h("table", {class: "grid compact"}, h("tbody", {}, rows.map(([name, value]) =>
        h("tr", {}, h("td", {}, name), h("td", {class: "num"}, show(value))))))));
    box.append(h("details", {id: "more-metrics"},
      h("summary", {}, `More metrics (${sections.size} sections from summary.json)`),
      h("div", {class: "metric-grid"}, cards)));
  }

  function facets(o) {
    for (const select of form.querySelectorAll("select[data-facet]")) {
      const values = o.facets[select.dataset.facet] || [];
      select.append(...values.map((v) => h("option", {value: v}, v)));
      select.value = state[select.name] || "";
    }
  }

  function banner(o) {
    const box = clear(document.getElementById("banner"));
    if (o.banner) {
      box.append(h("p", {class: "banner infra", id: "infra-banner", role: "alert"},
        h("b", {}, "Infrastructure errors. "), `${o.banner}. They are kept out of every rate; filter the table by termination infra_error to see them.`));
    }
    const live = document.getElementById("live");
    live.hidden = !o.live;
    live.textContent = o.live ? `live: ${num(o.episodes.finished)} of ${num(o.episodes.planned)} episodes, refreshing every ${POLL_MS / 1000} s` : "";
  }

  function subtitle(o) {
    clear(document.getElementById("subtitle"),
      `${o.suite.name || "?"} v${o.suite.version || "?"} · agent ${o.agent || "?"} · track ${o.track || "?"} · seed ${o.suite.seed ?? "?"} · ${TP.date(o.started_at)}`);
  }

  // ---- table -------------------------------------------------------------------
  function header() {
    const row = table.querySelector("thead tr");
    clear(row, COLUMNS.map(([key, label, numeric]) => {
      const sorted = (state.sort || "task_id") === key ? `sorted-${state.dir || "asc"}` : "";
      return h("th", {class: `sortable ${numeric ? "num" : ""} ${sorted}`, "data-sort": key,
        onclick: () => sortBy(key)}, label);
    }));
  }

  function sortBy(key) {
    const same = (state.sort || "task_id") === key;
    state.dir = same && (state.dir || "asc") === "asc" ? "desc" : "asc";
    state.sort = key;
    state.offset = "0";
    refresh();
  }

  function rowOf(r) {
    return h("tr", {"data-key": r.key},
      h("td", {}, h("a", {href: TP.episodeUrl(run, r.key)}, r.key)),
      h("td", {}, TP.passBadge(r.passed)),
      h("td", {}, TP.levelBadge(r.level)),
      h("td", {}, r.termination),
      h("td", {}, r.failure_mode || ""),
      h("td", {}, r.category), h("td", {}, r.type),
      h("td", {class: "num"}, r.difficulty),
      h("td", {class: "num"}, r.n_steps), h("td", {class: "num"}, r.n_tool_calls),
      h("td", {class: "num"}, secs(r.duration_s)),
      h("td", {class: "num"}, num(r.input_tokens + r.output_tokens)),
      h("td", {class: "num"}, usd(r.cost_usd)));
  }

  function pager(page) {
    const offset = page.offset, limit = page.limit;
    const go = (to) => { state.offset = String(to); refresh(); };
    clear(document.getElementById("pager"),
      h("button", {type: "button", id: "page-prev", disabled: offset <= 0, onclick: () => go(Math.max(0, offset - limit))}, "◀ Previous"),
      h("span", {id: "page-info"}, page.total ? `${num(offset + 1)}–${num(offset + page.rows.length)} of ${num(page.total)}` : "no episodes match"),
      h("button", {type: "button", id: "page-next", disabled: offset + limit >= page.total, onclick: () => go(offset + limit)}, "Next ▶"));
  }

  async function refresh() {
    const params = Object.fromEntries(Object.entries(state).filter(([, v]) => v !== "" && v !== undefined));
    history.replaceState(null, "", "?" + new URLSearchParams(params));
    header();
    const mine = ++request;
    table.dataset.state = "loading";
    const page = await api(`/api/runs/${TP.enc(run)}/episodes`, params);
    if (mine !== request) return;
    const body = table.querySelector("tbody");
    clear(body, page.rows.length ? page.rows.map(rowOf) : h("tr", {}, h("td", {colspan: COLUMNS.length, class: "muted"}, "No episodes match these filters.")));
    pager(page);
    table.dataset.total = String(page.total);
    table.dataset.state = "ready";
  }

  function setFilters(values) {
    for (const name of FILTERS) state[name] = values[name] || "";
    for (const name of FILTERS) form.elements[name].value = state[name];
    state.offset = "0";
    refresh().catch(TP.fail);
    table.scrollIntoView({behavior: "smooth"});
  }

  // ---- wiring ------------------------------------------------------------------
  for (const name of FILTERS) if (state[name]) form.elements[name].value = state[name];
  let typing = 0;
  form.addEventListener("input", (ev) => {
    const target = ev.target;
    state[target.name] = target.value;
    state.offset = "0";
    clearTimeout(typing);
    typing = setTimeout(() => refresh().catch(TP.fail), target.type === "search" ? 250 : 0);
  });
  form.addEventListener("submit", (ev) => ev.preventDefault());
  form.addEventListener("reset", (ev) => { ev.preventDefault(); setFilters({}); });

  // The table first: on a big run the overview takes longer to compute the first time.
  let faceted = false;
  const overview = () => api(`/api/runs/${TP.enc(run)}`).then((o) => {
    subtitle(o); banner(o); cards(o); charts(o); failures(o); extras(o);
    if (!faceted) { facets(o); faceted = true; }
    document.getElementById("charts").dataset.state = "ready";
    document.getElementById("main").dataset.live = String(o.live);
    return o;
  });
  // A live run (no summary.json yet, or incomplete) refreshes by itself until it is done.
  const poll = (o) => {
    if (!o || !o.live) return;
    setTimeout(() => refresh().then(overview).then(poll).catch(TP.fail), POLL_MS);
  };
  refresh().catch(TP.fail).then(overview).then(poll).catch(TP.fail);
})();
