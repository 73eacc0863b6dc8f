// The Autoscaler tab of a job (flinkish web), shown once the job's autoscaler has evaluated
// it: its rescale history as the registry holds it (GET /flinkish/registry/jobs/:jid/
// rescales: the latest evaluation and the rescale records, oldest first) over the job's
// series (GET /flinkish/jobs/:jid/series). One chart over time: the job's parallelism (a
// step line from the records: the first record's from, then each COMPLETED record's to at
// its end; a rolled-back, failed or metrics-only one changes nothing), each query's input
// rate and backlog (the sources' lag, on an axis of its own), and each rescale marked (filled:
// applied; hollow: not applied, rolled back, failed or under way). The step line's points are
// on the chart's box as data-parallelism ([[epoch ms, parallelism], ...]). Below: the latest
// evaluation's sentence and the guard that held it back, and the records newest first.
// Text from jobs is only ever set as text.
"use strict";

window.flinkishAutoscaler = (() => {
  const { COLOURS, el, api, table, badge, fmtTime, fmtDuration, fmtNumber } = window.flinkishUi;
  const HEIGHT = 260;
  const APPLIED = COLOURS[0]; // the parallelism's colour; not applied: red, hollow
  const NOT_APPLIED = "#c3322b";
  const LINES = COLOURS.filter((c) => c !== APPLIED && c !== NOT_APPLIED);

  async function history(jid) {
    return api(`flinkish/registry/jobs/${jid}/rescales`);
  }

  // True once the autoscaler has evaluated the job (the tab is shown from then on).
  async function evaluated(jid) {
    const data = await history(jid);
    return Boolean(data.latest || data.rescales.length);
  }

  // The job's parallelism over [start, end] (epoch ms) as [[time, parallelism], ...].
  function steps(data, start, end) {
    const records = data.rescales;
    const first = records.length ? records[0].from : data.latest && data.latest.current;
    if (first === null || first === undefined) return [];
    const points = [[records.length ? Math.min(start, records[0].time) : start, first]];
    const changes = records.filter((r) => r.outcome === "COMPLETED")
      .map((r) => [r["end-time"] === null ? r.time : r["end-time"], r.to])
      .sort((a, b) => a[0] - b[0]);
    for (const change of changes) points.push(change);
    const last = points[points.length - 1];
    if (end > last[0]) points.push([end, last[1]]);
    return points;
  }

  function chartData(series, data) {
    const index = Object.fromEntries(series.fields.map((name, i) => [name, i]));
    const times = [];
    for (const points of Object.values(series.queries)) {
      for (const p of points) times.push(p[index.time]);
    }
    for (const r of data.rescales) times.push(r.time, r["end-time"] || r.time);
    if (data.latest && data.latest.time) times.push(data.latest.time);
    if (!times.length) return null;
    const start = Math.min(...times);
    const end = Math.max(...times);
    const parallelism = steps(data, start, end);
    const tables = [[parallelism.map((p) => p[0] / 1000), parallelism.map((p) => p[1])]];
    const lines = [{ label: "parallelism", scale: "p", stroke: APPLIED, width: 2,
      spanGaps: true, paths: uPlot.paths.stepped({ align: 1 }),
      value: (u, v) => (v === null || v === undefined ? "—" : String(v)) }];
    let colour = 0;
    let backlog = false;
    for (const [query, points] of Object.entries(series.queries)) {
      const at = points.map((p) => p[index.time] / 1000);
      tables.push([at, points.map((p) => p[index.input_rows_per_second])]);
      lines.push({ label: `${query} in (rows/s)`, scale: "rate", width: 1.25, spanGaps: true,
        stroke: LINES[colour++ % LINES.length], value: (u, v) => fmtNumber(v) });
      const lag = points.map((p) => p[index.lag]);
      if (lag.some((v) => v !== null)) {
        backlog = true;
        tables.push([at, lag]);
        lines.push({ label: `${query} backlog`, scale: "backlog", width: 1.25, dash: [5, 4],
          spanGaps: true, stroke: LINES[colour++ % LINES.length],
          value: (u, v) => fmtNumber(v) });
      }
    }
    const marks = [["rescaled", (r) => r.outcome === "COMPLETED", APPLIED, APPLIED],
      ["not rescaled", (r) => r.outcome !== "COMPLETED", "#fff", NOT_APPLIED]];
    for (const [label, chosen, fill, stroke] of marks) {
      const records = data.rescales.filter(chosen);
      if (!records.length) continue;
      tables.push([records.map((r) => r.time / 1000), records.map((r) => r.to)]);
      lines.push({ label, scale: "p", stroke, paths: () => null,
        points: { show: true, size: 11, width: 2, fill, stroke },
        value: (u, v) => (v === null || v === undefined ? "—" : `→ ${v}`) });
    }
    return { data: uPlot.join(tables), series: lines, backlog, parallelism };
  }

  function makeChart(box, chart) {
    const side = (scale, label, size) => ({ scale, label, side: 1, size, labelSize: 18,
      grid: { show: false }, values: (u, ticks) => ticks.map(fmtNumber) });
    const axes = [{},
      { scale: "p", label: "parallelism", labelSize: 18, size: 36,
        incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500], values: (u, ticks) => ticks.map(String) },
      side("rate", "rows/s", 52)];
    if (chart.backlog) axes.push(side("backlog", "backlog", 52));
    const fromZero = (u, min, max) => [0, max > 0 ? max * 1.1 : 1];
    const options = {
      width: Math.max(280, box.clientWidth - 16),
      height: HEIGHT,
      legend: { show: true },
      cursor: { drag: { x: true, y: false } },
      scales: {
        x: { time: true },
        p: { range: (u, min, max) => [0, Math.max(1, max) + 1] },
        rate: { range: fromZero },
        backlog: { range: fromZero },
      },
      axes,
      series: [{}, ...chart.series],
    };
    return new uPlot(options, chart.data, box);
  }

  function latestSentence(latest) {
    if (!latest) return el("p", { class: "muted" }, "Not evaluated yet.");
    return el("p", { class: "notice", id: "autoscaler-latest" },
      el("b", {}, fmtTime(latest.time)), ` · parallelism ${latest.current} → ${latest.target}: `,
      latest.reason || "", latest.blocked_by
        ? [" ", el("span", { class: "blocked" }, `Held back by: ${latest.blocked_by}.`)] : null);
  }

  function records(data) {
    const rows = [...data.rescales].reverse().map((r) => el("tr",
      { "data-rescale": r.id, "data-outcome": r.outcome },
      el("td", {}, fmtTime(r.time)),
      el("td", { class: "num" }, `${r.from} → ${r.to}`),
      el("td", {}, badge(r.outcome)),
      el("td", {}, r.mode),
      el("td", { class: "num" },
        r["end-time"] === null ? "—" : fmtDuration(r["end-time"] - r.time)),
      el("td", { class: "reason" }, r.reason)));
    return table([["Time"], ["Parallelism", "num"], ["Outcome"], ["Mode"], ["Took", "num"],
      ["Reason"]], rows, "No rescale decided yet: the job has kept its parallelism.");
  }

  function panel(jid) {
    const root = el("div", { id: "autoscaler-tab" });
    const latest = el("div", {});
    const box = el("div", { class: "chart-body" });
    const list = el("div", { id: "rescales" });
    root.append(el("h2", {}, "Latest evaluation"), latest,
      el("div", { class: "chart", id: "chart-autoscaler" },
        el("h3", {}, "Parallelism, input rate and backlog"), box),
      el("h2", {}, "Rescales"), list);
    let chart = null;

    const resize = () => {
      if (chart) chart.setSize({ width: Math.max(280, box.clientWidth - 16), height: HEIGHT });
    };
    window.addEventListener("resize", resize);

    async function refresh() {
      const [series, data] = await Promise.all(
        [api(`flinkish/jobs/${jid}/series`), history(jid)]);
      latest.replaceChildren(latestSentence(data.latest));
      list.replaceChildren(records(data));
      const drawn = data.latest || data.rescales.length ? chartData(series, data) : null;
      if (!drawn) {
        if (chart) { chart.destroy(); chart = null; }
        delete box.dataset.parallelism;
        box.replaceChildren(el("div", { class: "none" },
          "The autoscaler has not evaluated this job (job.autoscaler.enabled)."));
        return;
      }
      box.dataset.parallelism = JSON.stringify(drawn.parallelism);
      if (chart && chart.series.length === drawn.series.length + 1) {
        chart.setData(drawn.data);
      } else {
        if (chart) chart.destroy();
        box.replaceChildren();
        chart = makeChart(box, drawn);
      }
    }
    function dispose() {
      window.removeEventListener("resize", resize);
      if (chart) chart.destroy();
    }
    return { root, refresh, dispose };
  }

  return { panel, evaluated };
})();
