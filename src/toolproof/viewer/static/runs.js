// The runs list: pick two runs to compare.
"use strict";

(() => {
  const {h, clear, api} = TP;
  const selected = [];
  const button = document.getElementById("compare");

  function toggle(id, on) {
    const at = selected.indexOf(id);
    if (on && at < 0) selected.push(id);
    if (!on && at >= 0) selected.splice(at, 1);
    button.disabled = selected.length !== 2;
    button.textContent = selected.length === 2
      ? `Compare ${selected[0]} → ${selected[1]}` : "Compare selected";
  }

  button.addEventListener("click", () => {
    if (selected.length !== 2) return;
    location.href = "/compare?" + new URLSearchParams({a: selected[0], b: selected[1]});
  });

  function row(run) {
    const box = h("input", {type: "checkbox", "aria-label": `select ${run.id}`,
      onchange: (e) => toggle(run.id, e.target.checked)});
    if (run.error) {
      return h("tr", {}, h("td", {}, ""), h("td", {}, run.id),
        h("td", {colspan: 7, class: "error"}, run.error));
    }
    const s = run.success;
    const state = run.finished ? "" : (run.episodes.complete ? " (no summary)" : " (unfinished)");
    return h("tr", {"data-run": run.id},
      h("td", {}, box),
      h("td", {}, h("a", {href: TP.runUrl(run.id)}, run.id), h("span", {class: "muted"}, state)),
      h("td", {}, `${run.suite || "?"} ${run.suite_version ? "v" + run.suite_version : ""}`),
      h("td", {}, run.agent || "?"),
      h("td", {}, TP.date(run.started_at)),
      s.n ? h("td", {}, h("b", {}, TP.pct(s.rate)), " ", h("span", {class: "ci"}, `(${TP.ci(s)})`),
        h("span", {class: "muted"}, ` ${s.successes}/${s.n}`))
        : h("td", {class: "infra-mark"}, "nothing scored"),
      h("td", {class: "num"}, `${TP.num(run.episodes.finished)}/${TP.num(run.episodes.planned)}`,
        run.episodes.infra_errors ? h("div", {class: "infra-mark", title: "infrastructure errors: not scored"},
          `${TP.num(run.episodes.infra_errors)} infra errors`) : ""),
      h("td", {class: "num"}, TP.num(run.tokens)),
      h("td", {class: "num"}, TP.usd(run.cost_usd)));
  }

  api("/api/runs").then((data) => {
    clear(document.getElementById("root"), `${data.runs.length} runs in ${data.root}`);
    const body = document.querySelector("#runs tbody");
    if (!data.runs.length) {
      clear(body, h("tr", {}, h("td", {colspan: 9, class: "muted"},
        "No runs here yet. Make one with: toolproof run core --agent oracle")));
      return;
    }
    clear(body, data.runs.map(row));
  }).catch(TP.fail);
})();
