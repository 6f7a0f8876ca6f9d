// The report's own script: draw the embedded charts, filter the task table.
(function () {
  "use strict";
  var figures = JSON.parse(document.getElementById("tp-figures").textContent);
  if (window.Plotly) {
    figures.forEach(function (fig, i) {
      var el = document.getElementById("chart-" + i);
      if (el) window.Plotly.newPlot(el, fig.data, fig.layout, {displaylogo: false, responsive: true});
    });
  }
  var filter = document.getElementById("task-filter");
  var failures = document.getElementById("failures-only");
  function apply() {
    var text = filter.value.trim().toLowerCase();
    document.querySelectorAll("#task-table tbody tr").forEach(function (row) {
      var hide = (text && row.textContent.toLowerCase().indexOf(text) < 0) ||
        (failures.checked && row.getAttribute("data-failed") !== "true");
      row.classList.toggle("hidden", Boolean(hide));
    });
  }
  filter.addEventListener("input", apply);
  failures.addEventListener("change", apply);
})();
