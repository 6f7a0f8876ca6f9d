// One episode replayed step by step: transcript, tool calls, state diffs, checks.
"use strict";

(() => {
  const {h, clear, api, num, secs, usd} = TP;
  const main = document.getElementById("main");
  const run = main.dataset.run, key = main.dataset.key;
  const base = `/api/runs/${TP.enc(run)}/episodes/${TP.enc(key)}`;
  let episode = null, current = 0, timer = null;
  const fileCache = new Map();

  function message(role, content) {
    return h("div", {class: "message"}, h("div", {class: "role"}, role), h("pre", {}, content ?? ""));
  }

  function call(c) {
    const r = c.result;
    const failed = r && r.is_error;
    return h("div", {class: `call ${failed ? "failed" : ""}`},
      h("div", {}, h("span", {class: "name"}, c.name), " ", h("span", {class: "muted"}, c.id)),
      h("pre", {class: "args"}, c.raw_arguments ?? TP.json(c.arguments)),
      r ? h("div", {},
        h("div", {class: "muted"}, failed ? `error (${r.error_kind || "tool_error"})` : "result", ` · ${secs(r.duration_s)}`),
        h("pre", {class: "result"}, r.content))
        : h("div", {class: "muted"}, "no result recorded"));
  }

  function usageText(u) {
    if (!u) return "no usage reported";
    return `${num(u.input_tokens)} in / ${num(u.output_tokens)} out tokens${u.cost_usd != null ? " · " + usd(u.cost_usd) : ""}${u.estimated ? " (estimated)" : ""}`;
  }

  function stepBox(step, i) {
    return h("article", {class: "step", id: `step-${i}`, "data-index": step.index},
      h("div", {class: "meta"}, `Step ${i + 1} · agent ${secs(step.agent_s)} · tools ${secs(step.tool_s)} · ${usageText(step.usage)}`),
      step.content ? message("assistant", step.content) : null,
      step.calls.map(call),
      step.orphan_results.map((r) => message(`tool ${r.name}`, r.content)),
      step.observations.map((m) => message(m.role, m.content)),
      Object.keys(step.annotations).length ? h("pre", {class: "muted"}, TP.json(step.annotations)) : null);
  }

  function diffLines(lines) {
    return h("div", {class: "diffbox"}, lines.map((line) => {
      const cls = line.startsWith("@@") ? "hunk" : line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : "";
      return h("div", {class: `diff-line ${cls}`}, line);
    }));
  }

  function showFiles(box, data) {
    if (!data.available) { box.append(h("p", {class: "muted"}, "File contents were not kept for this run.")); return; }
    for (const f of data.files) {
      box.append(h("h3", {}, `${f.change}: ${f.path}`),
        f.diff.length ? diffLines(f.diff)
          : h("p", {class: "muted"}, f.after === "" || f.before === "" ? "(empty file)" : "no text difference"));
    }
  }

  function renderDiff() {
    const step = episode.steps[current];
    const box = clear(document.getElementById("diff"));
    clear(document.getElementById("diff-title"), `State change at step ${current + 1}`);
    if (!step || !step.diff) { box.append(h("p", {class: "muted", id: "no-diff"}, "This step changed nothing.")); return; }
    const d = step.diff;
    if (d.records.length) {
      box.append(h("table", {class: "grid", id: "record-diff"},
        h("thead", {}, h("tr", {}, h("th", {}, "Record"), h("th", {}, "Before"), h("th", {}, "After"))),
        h("tbody", {}, d.records.map(([path, before, after]) => h("tr", {class: "record-change"},
          h("td", {}, h("code", {}, path)),
          h("td", {}, h("pre", {}, before === null ? "(absent)" : TP.json(before))),
          h("td", {}, h("pre", {}, after === null ? "(absent)" : TP.json(after))))))));
    }
    const files = [["added", d.files_added], ["removed", d.files_removed], ["modified", d.files_modified]];
    const listed = files.filter(([, paths]) => paths.length);
    if (!listed.length) return;
    box.append(h("ul", {id: "file-changes"}, listed.flatMap(([kind, paths]) =>
      paths.map((p) => h("li", {class: "file-change"}, h("span", {class: `badge ${kind === "removed" ? "fail" : kind === "added" ? "pass" : "partial"}`}, kind), " ", h("code", {}, p))))));
    const files_box = h("div", {id: "file-diffs"}, h("p", {class: "muted"}, "Loading file contents…"));
    box.append(files_box);
    const index = step.index;
    const load = fileCache.get(index) || api(`${base}/steps/${index}/files`);
    fileCache.set(index, load);
    load.then((data) => { if (episode.steps[current].index === index) { clear(files_box); showFiles(files_box, data); } })
      .catch((e) => clear(files_box, h("p", {class: "error"}, String(e.message || e))));
  }

  function renderChecks() {
    const s = episode.score;
    clear(document.getElementById("checks"),
      s.checks.map((c) => h("div", {class: `check ${c.passed ? "passed" : "failed"}`},
        h("span", {class: `badge ${c.passed ? "pass" : "fail"}`}, c.passed ? "pass" : "fail"), " ",
        h("b", {}, c.name), " ", h("span", {class: "muted"}, `${c.kind}${c.veto ? " · veto" : ""} · weight ${c.weight} · score ${c.score}`),
        c.detail ? h("div", {class: "detail"}, c.detail) : null)),
      s.failure_mode ? h("p", {}, "Failure mode: ", h("b", {}, s.failure_mode),
        s.failure_step != null ? ` (step ${s.failure_step + 1})` : "") : null);
  }

  function go(i) {
    const n = episode.steps.length;
    current = Math.max(0, Math.min(n - 1, i));
    document.querySelectorAll("#transcript .step").forEach((el, j) => {
      el.hidden = j > current;
      el.classList.toggle("current", j === current);
    });
    document.getElementById("final").hidden = n > 0 && current !== n - 1;
    document.querySelectorAll("#timeline button").forEach((b, j) => b.classList.toggle("current", j === current));
    clear(document.getElementById("position"), n ? `Step ${current + 1} / ${n}` : "No steps");
    document.getElementById("prev").disabled = current <= 0;
    document.getElementById("first").disabled = current <= 0;
    document.getElementById("next").disabled = current >= n - 1;
    document.getElementById("last").disabled = current >= n - 1;
    if (n) {
      renderDiff();
      document.getElementById(`step-${current}`).scrollIntoView({block: "nearest"});
    } else {
      clear(document.getElementById("diff"), h("p", {class: "muted"}, "The episode has no steps."));
    }
    main.dataset.step = String(current);
    if (current >= n - 1) stop();
  }

  function stop() { clearInterval(timer); timer = null; clear(document.getElementById("play"), "▶ Play"); }
  function play() {
    if (timer) { stop(); return; }
    if (current >= episode.steps.length - 1) go(0);
    clear(document.getElementById("play"), "⏸ Pause");
    timer = setInterval(() => go(current + 1), 1200);
  }

  function render(e) {
    episode = e;
    const s = e.score;
    clear(document.getElementById("header"),
      h("div", {class: "facts"},
        TP.passBadge(s.passed), TP.levelBadge(s.level),
        h("span", {}, "termination ", h("b", {}, e.termination)),
        h("span", {}, "checks ", h("b", {}, `${Math.round(100 * s.fraction)}%`)),
        h("span", {}, "tool calls ", h("b", {}, s.tool_calls)),
        h("span", {}, "duration ", h("b", {}, secs(e.duration_s))),
        h("span", {}, usageText(e.usage))),
      h("div", {class: "facts"},
        h("span", {}, "task ", h("b", {}, e.task.id)), h("span", {}, "epoch ", h("b", {}, e.epoch)),
        h("span", {}, "category ", h("b", {}, e.task.category)), h("span", {}, "type ", h("b", {}, e.task.type)),
        h("span", {}, "difficulty ", h("b", {}, e.task.difficulty)), h("span", {}, "domain ", h("b", {}, e.task.domain)),
        h("span", {}, "agent ", h("b", {}, e.agent)), h("span", {}, "attempts ", h("b", {}, e.attempts)),
        e.isolated ? null : h("span", {class: "error"}, "ran without a sandbox")),
      e.error ? h("p", {class: "error"}, e.error) : null);
    clear(document.getElementById("prompt-body"), e.prompt.map((m) => message(m.role, m.content)));
    clear(document.getElementById("transcript"), e.steps.map(stepBox),
      h("div", {class: "final", id: "final"}, h("h3", {}, "Final answer"),
        h("pre", {}, e.final_answer ?? "(none)"), h("div", {class: "muted"}, `ended: ${e.termination}`)));
    clear(document.getElementById("timeline"), e.steps.map((st, i) => h("button", {
      type: "button", title: `step ${i + 1}`, onclick: () => { stop(); go(i); },
      class: `${st.diff ? "changed" : ""} ${st.calls.some((c) => c.result && c.result.is_error) ? "had-error" : ""}`,
    }, String(i + 1))));
    renderChecks();
    go(0);
    main.dataset.state = "ready";
  }

  document.getElementById("back").href = TP.runUrl(run);
  document.getElementById("first").addEventListener("click", () => { stop(); go(0); });
  document.getElementById("prev").addEventListener("click", () => { stop(); go(current - 1); });
  document.getElementById("next").addEventListener("click", () => { stop(); go(current + 1); });
  document.getElementById("last").addEventListener("click", () => { stop(); go(episode.steps.length - 1); });
  document.getElementById("play").addEventListener("click", play);
  document.addEventListener("keydown", (ev) => {
    if (!episode || ev.target.closest("input, select, textarea")) return;
    const moves = {ArrowRight: () => go(current + 1), ArrowLeft: () => go(current - 1),
      Home: () => go(0), End: () => go(episode.steps.length - 1), " ": play};
    const move = moves[ev.key];
    if (!move) return;
    ev.preventDefault();
    if (ev.key !== " ") stop();
    move();
  });

  api(base).then(render).catch(TP.fail);
})();
