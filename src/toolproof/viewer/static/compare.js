// Two runs side by side: metric changes with their tests, tasks and episodes that flipped.
"use strict";

(() => {
  const {h, clear, api, pct, num} = TP;
  const main = document.getElementById("main");
  const a = main.dataset.a, b = main.dataset.b;
  const RATES = new Set(["success", "pass_loose", "hallucination", "fraction", "valid_arguments_rate", "redundancy_rate"]);

  document.getElementById("swap").href = "/compare?" + new URLSearchParams({a: b, b: a});

  function runCard(run, label) {
    const s = run.success;
    return h("div", {class: "card"}, h("div", {class: "label"}, label),
      h("div", {}, h("a", {href: TP.runUrl(run.id)}, run.id)),
      h("div", {class: "value"}, pct(s.rate)),
      h("div", {class: "sub"}, `95% CI ${TP.ci(s)} · ${s.successes}/${s.n} · ${run.suite} · agent ${run.agent} · ${TP.date(run.started_at)}`));
  }

  function fmt(name, x) {
    if (x === null || x === undefined) return "–";
    if (RATES.has(name)) return pct(x);
    if (name === "cost_usd") return TP.usd(x);
    if (name.endsWith("_s")) return TP.secs(x);
    return num(x, 2);
  }

  function change(m) {
    if (m.change === null || m.change === undefined) return h("span", {class: "muted"}, "–");
    const text = (m.change > 0 ? "+" : "") + (RATES.has(m.name) ? `${(100 * m.change).toFixed(1)} pts` : fmt(m.name, m.change));
    const cls = m.verdict === "better" ? "up" : m.verdict === "worse" ? "down" : "";
    return h("span", {class: `delta ${cls}`}, text);
  }

  function interval(m) {
    if (m.ci_low === null || m.ci_low === undefined) return m.test === "mcnemar" ? `${m.a_only} vs ${m.b_only} discordant` : "";
    const f = (x) => RATES.has(m.name) ? `${(100 * x).toFixed(1)}` : fmt(m.name, x);
    return `${f(m.ci_low)} to ${f(m.ci_high)}`;
  }

  function verdict(m) {
    const cls = {better: "fixed", worse: "broke"}[m.verdict] || "same";
    return h("span", {class: `badge ${cls}`}, m.verdict);
  }

  function ratio(pair) { return pair ? `${pair[0]}/${pair[1]}` : "–"; }

  function tasks(data) {
    const only = document.getElementById("changed-only").checked;
    const rows = data.tasks.filter((t) => !only || t.change !== "same");
    clear(document.querySelector("#tasks tbody"),
      h("tr", {}, h("th", {}, "Task"), h("th", {class: "num"}, `A: ${a}`), h("th", {class: "num"}, `B: ${b}`), h("th", {}, "Change")),
      rows.length ? rows.map((t) => h("tr", {class: `task-row ${t.change}`, "data-task": t.task_id},
        h("td", {}, t.task_id), h("td", {class: "num"}, ratio(t.a)), h("td", {class: "num"}, ratio(t.b)),
        h("td", {}, h("span", {class: `badge ${t.change === "fixed" ? "fixed" : t.change === "broke" ? "broke" : "same"}`}, t.change))))
        : h("tr", {}, h("td", {colspan: 4, class: "muted"}, "No task changed.")));
  }

  function flipRows(flips, kind) {
    return flips.map((f) => {
      const key = `${f.task}#${f.epoch}`;
      return h("tr", {class: "flip"},
        h("td", {}, key), h("td", {}, h("span", {class: `badge ${kind}`}, kind)),
        h("td", {}, h("a", {href: TP.episodeUrl(a, key)}, f.a_level), f.a_failure_mode ? h("span", {class: "muted"}, ` ${f.a_failure_mode}`) : null),
        h("td", {}, h("a", {href: TP.episodeUrl(b, key)}, f.b_level), f.b_failure_mode ? h("span", {class: "muted"}, ` ${f.b_failure_mode}`) : null));
    });
  }

  function render(data) {
    clear(document.getElementById("runs"), runCard(data.run_a, "A · baseline"), runCard(data.run_b, "B · candidate"));
    if (data.mismatches.length) {
      document.getElementById("runs").after(h("div", {class: "error", id: "mismatch"},
        "These runs do not pair cleanly: ", data.mismatches.join("; "), "."));
    }
    const problems = [...(data.fatal || []), ...(data.partial || [])];
    if (problems.length) {
      document.getElementById("runs").after(h("div", {class: "error", id: "cannot-gate"},
        h("b", {}, "This comparison cannot gate: "), problems.join("; "), "."));
    }
    clear(document.querySelector("#metrics tbody"),
      h("tr", {}, h("th", {}, "Metric"), h("th", {}, "Better"), h("th", {class: "num"}, "A"), h("th", {class: "num"}, "B"),
        h("th", {class: "num"}, "B − A"), h("th", {}, `${Math.round(100 * (1 - data.alpha))}% CI / pairs`),
        h("th", {class: "num"}, "p"), h("th", {}, "Verdict")),
      data.metrics.map((m) => h("tr", {"data-metric": m.name},
        h("td", {title: m.description}, m.name, h("div", {class: "muted"}, m.description)),
        h("td", {class: "direction muted", title: m.direction}, m.higher_is_better ? "higher" : "lower"),
        h("td", {class: "num"}, fmt(m.name, m.a)), h("td", {class: "num"}, fmt(m.name, m.b)),
        h("td", {class: "num"}, change(m)), h("td", {class: "muted"}, interval(m)),
        h("td", {class: "num"}, m.p_value === null ? "–" : m.p_value < 0.001 ? "<0.001" : m.p_value.toFixed(3)),
        h("td", {}, verdict(m)))));
    clear(document.getElementById("paired"),
      `${num(data.paired)} episodes paired by task and epoch (${data.only_a} only in A, ${data.only_b} only in B, ${data.infra_excluded} left out for infra errors): `,
      `${data.improvements_total} fixed, ${data.regressions_total} broke. Binary metrics: exact McNemar test; others: paired bootstrap over tasks.`);
    tasks(data);
    document.getElementById("changed-only").addEventListener("change", () => tasks(data));
    const flips = [...flipRows(data.regressions, "broke"), ...flipRows(data.improvements, "fixed")];
    clear(document.querySelector("#flips tbody"),
      h("tr", {}, h("th", {}, "Episode"), h("th", {}, "Change"), h("th", {}, "A"), h("th", {}, "B")),
      flips.length ? flips : h("tr", {}, h("td", {colspan: 4, class: "muted"}, "No episode flipped.")));
    main.dataset.state = "ready";
  }

  api("/api/compare", {a, b}).then(render).catch(TP.fail);
})();
