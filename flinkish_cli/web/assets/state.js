// The State tab of a job (flinkish web): each stateful operator's size over time, from the
// job's series (its state rows and bytes in memory per batch, as Spark reports them), and,
// on demand, what flinkish state ls and state show read from the job's latest checkpoint:
// its operators and stores with their schemas and rows (GET /flinkish/jobs/:jid/state) and
// an operator's biggest keys, or one key's rows (GET /flinkish/jobs/:jid/state/:query/
// :operator?key=). Those reads
// start Spark in a child process of the server and take seconds; the server keeps each
// answer until the job commits another batch. Text from jobs is only ever set as text.
"use strict";

window.flinkishState = (() => {
  const { el, api, table, fmtNumber, fmtBytes, makeChart } = window.flinkishUi;
  const KEYS = 10; // biggest keys shown per store

  const CHARTS = [
    { id: "operator-bytes", title: "State size in memory, per operator", at: 1, format: fmtBytes },
    { id: "operator-rows", title: "State rows, per operator", at: 0, format: fmtNumber },
  ];

  function chartData(series, spec) {
    const tables = [];
    const labels = [];
    for (const [query, kept] of Object.entries(series.operators || {})) {
      kept.names.forEach((name, i) => {
        tables.push([kept.points.map((p) => p[0] / 1000),
          kept.points.map((p) => p[i + 1][spec.at])]);
        labels.push(`${query} · ${i} ${name}`);
      });
    }
    if (!tables.length) return null;
    return { data: tables.length === 1 ? tables[0] : uPlot.join(tables), labels };
  }

  function compact(value) {
    return value === null || value === undefined ? "—" : JSON.stringify(value);
  }

  function panel(jid) {
    const root = el("div", { id: "state-tab" });
    const chartsBox = el("div", { class: "charts" });
    const boxes = {};
    const charts = {};
    for (const spec of CHARTS) {
      boxes[spec.id] = el("div", { class: "chart-body" });
      chartsBox.append(el("div", { class: "chart", id: "chart-" + spec.id },
        el("h3", {}, spec.title), boxes[spec.id]));
    }
    const status = el("p", { class: "muted", id: "state-status" },
      "Reading the state starts Spark in a process of its own and takes a few seconds.");
    const readButton = el("button", { id: "read-state", type: "button" }, "Read the state");
    const keyInput = el("input", { id: "state-key", type: "text",
      placeholder: "a key: a value, or a JSON object of key fields (empty: the biggest keys)" });
    const operators = el("div", { id: "state-operators" });
    const keys = el("div", { id: "state-keys" });
    root.append(
      el("h2", {}, "State size over time"), chartsBox,
      el("h2", {}, "Operators and stores (the latest checkpoint)"),
      el("div", { class: "actions" }, readButton, keyInput), status, operators, keys);

    async function biggest(query, op, button) {
      button.disabled = true;
      const key = keyInput.value.trim();
      const what = key ? `The rows of ${key} in ${query}, operator ${op}`
        : `Biggest keys of ${query}, operator ${op}`;
      keys.replaceChildren(el("p", { class: "notice" }, `Reading: ${what}…`));
      try {
        const filter = key ? `&key=${encodeURIComponent(key)}` : "";
        const data = await api(`flinkish/jobs/${jid}/state/${encodeURIComponent(query)}/${op}?limit=${KEYS}${filter}`);
        keys.replaceChildren(el("h2", {}, what),
          ...data.stores.map((s) => el("div", { class: "store-keys", "data-store": `${query}/${op}/${s.store}` },
            el("h3", {}, `Store ${s.store} at batch ${s.batch}: ${fmtNumber(s.total)} rows`),
            table([["Key"], ["Value"], ["Key rows", "num"], ["Key bytes", "num"]],
              s.rows.map((r) => el("tr", {},
                el("td", { class: "mono path" }, compact(r.key)),
                el("td", { class: "mono path" }, compact(r.value)),
                el("td", { class: "num" }, fmtNumber(r["key-rows"])),
                el("td", { class: "num" }, fmtBytes(r["key-bytes"])))),
              "The store is empty."))));
      } catch (error) {
        keys.replaceChildren(el("p", { class: "notice bad" },
          `Could not read the keys: ${error.message}`));
      } finally {
        button.disabled = false;
      }
    }

    async function read() {
      readButton.disabled = true;
      status.textContent = "Reading the state (Spark starts in a process of its own)…";
      try {
        const data = await api(`flinkish/jobs/${jid}/state`);
        const rows = [];
        for (const q of data.queries) {
          for (const op of q.operators) {
            op.stores.forEach((s, i) => {
              const button = i === 0 ? el("button", {
                type: "button", class: "biggest-keys", "data-operator": `${q.name}/${op.id}`,
              }, "Show keys") : null;
              if (button) button.addEventListener("click", () => biggest(q.name, op.id, button));
              rows.push(el("tr", { "data-store": `${q.name}/${op.id}/${s.name}` },
                el("td", {}, q.name), el("td", { class: "num" }, String(q.batch)),
                el("td", {}, `${op.id} ${op.kind}`), el("td", {}, s.name),
                el("td", { class: "mono" }, s["key-schema"]),
                el("td", { class: "mono" }, s["value-schema"]),
                el("td", { class: "num" }, fmtNumber(s.rows)),
                el("td", { class: "num" }, fmtBytes(s.bytes === null ? op.bytes : s.bytes)),
                el("td", {}, button)));
            });
          }
        }
        operators.replaceChildren(table(
          [["Query"], ["Batch", "num"], ["Operator"], ["Store"], ["Key schema"],
            ["Value schema"], ["Rows", "num"], ["Bytes on storage", "num"], [""]],
          rows, "The job has no stateful operator."));
        status.textContent = `Read from the job's checkpoint (${data.queries.length} queries).`;
      } catch (error) {
        status.textContent = "";
        operators.replaceChildren(el("p", { class: "notice bad" },
          `Could not read the state: ${error.message}`));
      } finally {
        readButton.disabled = false;
      }
    }
    readButton.addEventListener("click", read);

    const resize = () => {
      for (const [id, chart] of Object.entries(charts)) {
        chart.setSize({ width: Math.max(280, boxes[id].clientWidth - 16), height: 220 });
      }
    };
    window.addEventListener("resize", resize);

    async function refresh() {
      const series = await api(`flinkish/jobs/${jid}/series`);
      for (const spec of CHARTS) {
        const data = chartData(series, spec);
        const box = boxes[spec.id];
        const chart = charts[spec.id];
        if (!data) {
          if (chart) { chart.destroy(); delete charts[spec.id]; }
          box.replaceChildren(el("div", { class: "none" },
            "No stateful operator has completed a batch yet."));
          continue;
        }
        if (chart && chart.series.length === data.labels.length + 1) {
          chart.setData(data.data);
        } else {
          if (chart) chart.destroy();
          box.replaceChildren();
          charts[spec.id] = makeChart(box, spec, data);
        }
      }
    }
    function dispose() {
      window.removeEventListener("resize", resize);
      for (const chart of Object.values(charts)) chart.destroy();
    }
    return { root, refresh, dispose };
  }

  return { panel };
})();
