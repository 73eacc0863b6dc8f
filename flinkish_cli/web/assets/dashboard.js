// The dashboard of flinkish web: every job in the registry, read from the same endpoint's
// REST API (Flink's paths, and flinkish's own under /flinkish/), refreshed every
// refresh-interval (GET /config). Views: #/overview (the job list) and
// #/job/<JobID>/<tab> (overview with charts, the job graph, checkpoints with each query's
// size on storage, savepoints, exceptions, configuration, state, and the autoscaler's
// rescales once it has evaluated the job). Its small pieces are ui.js's, the graph's drawing
// graph.js's, the State tab state.js's, the Autoscaler tab autoscaler.js's. Text from jobs
// is only ever set as text (never as HTML).
"use strict";

(() => {
  const {
    TABS, TERMINAL, COLOURS, TOKEN_KEY, state, el, Unauthorized, api, pad, fmtTime,
    fmtDuration, fmtAge, fmtNumber, fmtRate, fmtBytes, badge, table, facts, show, problem,
    makeChart,
  } = window.flinkishUi;

  // -- the job list ----------------------------------------------------------------------
  function overviewView() {
    const root = el("section", {});
    async function refresh() {
      const data = await api("flinkish/jobs");
      const now = data.now;
      const running = data.jobs.filter((j) => !TERMINAL.has(j.state));
      const done = data.jobs.filter((j) => TERMINAL.has(j.state));
      const columns = [
        ["Job name"], ["JobID"], ["State"], ["Start time"], ["Uptime", "num"],
        ["Last checkpoint", "num"], ["Input rate", "num"], ["Processing rate", "num"],
        ["Last savepoint"],
      ];
      const row = (job) => el("tr", { "data-jid": job.jid },
        el("td", {}, el("a", { href: "#/job/" + job.jid + "/overview" }, job.name)),
        el("td", { class: "mono" }, job.jid),
        el("td", {}, badge(job.state)),
        el("td", {}, fmtTime(job["start-time"])),
        el("td", { class: "num" }, fmtDuration(job.duration)),
        el("td", { class: "num" }, fmtAge(job["last-checkpoint"], now)),
        el("td", { class: "num" }, fmtRate(job["input-rate"])),
        el("td", { class: "num" }, fmtRate(job["processing-rate"])),
        el("td", { class: "path" }, job["last-savepoint"]
          ? [fmtAge(job["last-savepoint"].time, now), el("br"),
            el("span", { class: "mono muted" }, job["last-savepoint"].path)]
          : "—"));
      const parts = [
        el("h1", {}, "Running jobs"),
        table(columns, running.map(row),
          "No job is running. Start one with: flinkish run -d job.py"),
        el("h1", {}, "Completed jobs"),
        table(columns, done.map(row), "No job has ended yet."),
      ];
      if (data.unreadable) {
        parts.unshift(el("p", { class: "notice bad" },
          `${data.unreadable} job(s) in the registry could not be read; flinkish list names them.`));
      }
      root.replaceChildren(...parts);
    }
    show(root);
    return { refresh, dispose() {} };
  }

  // -- charts ----------------------------------------------------------------------------
  const CHARTS = [
    { id: "rates", title: "Input and processing rate (rows/s)", fields: [
      ["input_rows_per_second", "in"], ["processed_rows_per_second", "processed"]],
      format: fmtNumber },
    { id: "duration", title: "Batch (checkpoint) duration", fields: [["duration_ms", ""]],
      format: (v) => fmtDuration(v) },
    { id: "state", title: "State size", fields: [["state_bytes", ""]], format: fmtBytes },
    { id: "state-rows", title: "State rows", fields: [["state_rows", ""]], format: fmtNumber },
    { id: "lag", title: "Lag (records behind the sources' latest offsets)",
      fields: [["lag", ""]], format: fmtNumber,
      none: "No source of this job reports a lag (Spark's Kafka source does)." },
  ];

  function chartData(series, spec) {
    const index = Object.fromEntries(series.fields.map((name, i) => [name, i]));
    const t = index.time;
    const tables = [];
    const labels = [];
    for (const [query, points] of Object.entries(series.queries)) {
      for (const [field, suffix] of spec.fields) {
        const i = index[field];
        tables.push([points.map((p) => p[t] / 1000), points.map((p) => p[i])]);
        labels.push(suffix ? `${query} ${suffix}` : query);
      }
    }
    const hasValue = tables.some(([, ys]) => ys.some((y) => y !== null));
    if (!tables.length || !hasValue) return null;
    return { data: tables.length === 1 ? tables[0] : uPlot.join(tables), labels };
  }

  function chartsPanel(jid) {
    const root = el("div", { class: "charts" });
    const boxes = {};
    const charts = {};
    for (const spec of CHARTS) {
      const holder = el("div", { class: "chart-body" });
      boxes[spec.id] = holder;
      root.append(el("div", { class: "chart", id: "chart-" + spec.id },
        el("h3", {}, spec.title), holder));
    }
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
            spec.none || "No completed batch yet."));
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

  // -- a job -----------------------------------------------------------------------------
  function jobView(jid, tab) {
    const header = el("div", {});
    const notice = el("div", { id: "action-result" });
    const body = el("div", {});
    const tabs = el("nav", { class: "tabs" }, TABS.map(([id, label]) =>
      el("a", { href: `#/job/${jid}/${id}`, class: id === tab ? "active" : null, id: "tab-" + id },
        label)));
    const autoscalerTab = tabs.querySelector("#tab-autoscaler");
    autoscalerTab.hidden = tab !== "autoscaler";
    show(el("p", {}, el("a", { href: "#/overview" }, "← All jobs")), header, notice, tabs, body);
    let charts = null;
    if (tab === "overview") {
      charts = chartsPanel(jid);
    } else if (tab === "state") {
      charts = window.flinkishState.panel(jid);
    } else if (tab === "autoscaler") {
      charts = window.flinkishAutoscaler.panel(jid);
    }
    const jobQueries = el("div", {});
    if (charts) body.append(charts.root, ...(tab === "overview" ? [jobQueries] : []));
    let actionsBuilt = false;
    const actions = el("div", { class: "actions" });

    function say(text, bad) {
      notice.replaceChildren(el("p", { class: bad ? "notice bad" : "notice" }, text));
    }

    async function cancel(button) {
      if (!window.confirm(`Cancel job ${jid}? Its state is kept as of its last batch.`)) return;
      button.disabled = true;
      try {
        await api(`jobs/${jid}?mode=cancel`, { method: "PATCH" });
        say(`Cancellation of job ${jid} requested.`);
      } catch (error) {
        say(`Could not cancel: ${error.message}`, true);
      } finally {
        button.disabled = false;
      }
    }

    async function stop(button, input) {
      const target = input.value.trim();
      if (!window.confirm(`Stop job ${jid} with a savepoint?`)) return;
      button.disabled = true;
      const request = { drain: false };
      if (target) request.targetDirectory = target;
      try {
        const { "request-id": trigger } = await api(`jobs/${jid}/stop`,
          { method: "POST", body: JSON.stringify(request) });
        say(`Stopping job ${jid} with a savepoint (trigger ${trigger})…`);
        for (;;) {
          const result = await api(`jobs/${jid}/savepoints/${trigger}`);
          if (result.status && result.status.id === "COMPLETED") {
            say(`Job ${jid} stopped. Savepoint completed: ${result.operation.location}`);
            break;
          }
          await new Promise((resolve) => setTimeout(resolve, 1000));
        }
      } catch (error) {
        say(`Could not stop with a savepoint: ${error.message}`, true);
      } finally {
        button.disabled = false;
      }
    }

    function buildActions(job) {
      if (actionsBuilt) return;
      actionsBuilt = true;
      const input = el("input", { id: "savepoint-dir", type: "text",
        placeholder: "savepoint directory (default: state.savepoints.dir)" });
      const stopButton = el("button", { id: "stop-job", type: "button" }, "Stop with savepoint");
      const cancelButton = el("button", { id: "cancel-job", type: "button", class: "danger" },
        "Cancel job");
      stopButton.addEventListener("click", () => stop(stopButton, input));
      cancelButton.addEventListener("click", () => cancel(cancelButton));
      actions.replaceChildren(input, stopButton, cancelButton);
    }

    function renderHeader(job) {
      const canAct = state.config && state.config.features["web-cancel"] &&
        !TERMINAL.has(job.state);
      if (canAct) buildActions(job); else { actions.replaceChildren(); actionsBuilt = false; }
      const sp = job["last-savepoint"];
      header.replaceChildren(
        el("h1", {}, job.name, " ", badge(job.state)),
        el("div", { class: "card" }, facts([
          ["JobID", el("span", { class: "mono" }, job.jid), true],
          ["Start time", fmtTime(job["start-time"])],
          ["End time", job["end-time"] > 0 ? fmtTime(job["end-time"]) : null],
          ["Uptime", fmtDuration(job.duration)],
          ["Parallelism", String(job.maxParallelism)],
          ["Restarts", String(job.restarts || 0)],
          ["Restored from", job["restored-from"], true],
          ["Upgraded from", job.upgraded_from, true],
          ["Upgraded to", job.upgraded_to, true],
          ["Last savepoint", sp ? `${fmtTime(sp.time)} · ${sp.path}` : null, true],
          ["Failure cause", job["failure-cause"], true],
        ]), actions));
      jobQueries.replaceChildren(el("h2", {}, "Queries"), table(
        [["Query"], ["Status"], ["Rows read (recent batches)", "num"]],
        job.vertices.map((v) => el("tr", {}, el("td", {}, v.name), el("td", {}, badge(v.status)),
          el("td", { class: "num" }, fmtNumber(v.metrics["read-records"])))),
        "No query has started yet."));
    }

    async function renderCheckpoints() {
      const data = await api(`jobs/${jid}/checkpoints`);
      const latest = data.latest.completed;
      const s = data.summary;
      const rows = data.history.map((c) => el("tr", {},
        el("td", { class: "num" }, String(c.id)),
        el("td", {}, c.query),
        el("td", {}, fmtTime(c.latest_ack_timestamp)),
        el("td", { class: "num" }, fmtDuration(c.end_to_end_duration)),
        el("td", { class: "num" }, fmtNumber(c.processed_data)),
        el("td", { class: "num" }, fmtNumber(c.state_rows)),
        el("td", { class: "num" }, fmtBytes(c.state_size)),
        el("td", { class: "num" }, c.lag === null ? "—" : fmtNumber(c.lag)),
        el("td", { class: "path mono" }, c.external_path)));
      body.replaceChildren(
        el("div", { class: "card" }, facts([
          ["Completed", String(data.counts.completed)],
          ["Restored from", data.latest.restored ? data.latest.restored.external_path : "no", true],
          ["Latest completed", latest ? `#${latest.id} (${latest.query}) at ${fmtTime(latest.latest_ack_timestamp)}` : "—", true],
          ["Duration min / avg / max", `${fmtDuration(s.end_to_end_duration.min)} / ${fmtDuration(s.end_to_end_duration.avg)} / ${fmtDuration(s.end_to_end_duration.max)}`],
          ["State size min / avg / max", `${fmtBytes(s.state_size.min)} / ${fmtBytes(s.state_size.avg)} / ${fmtBytes(s.state_size.max)}`],
        ])),
        checkpointSize(await api(`flinkish/jobs/${jid}/checkpoint-size`)),
        el("h2", {}, "History (a checkpoint is a committed micro-batch)"),
        table([["ID", "num"], ["Query"], ["Completed"], ["Duration", "num"], ["Rows", "num"],
          ["State rows", "num"], ["State size", "num"], ["Lag", "num"], ["Checkpoint"]],
        rows, "No micro-batch has completed yet."));
    }

    // What each query's checkpoint takes on storage, by part, as its driver last measured
    // it; the parts that grow for as long as the query runs say why and what to do.
    function checkpointSize(data) {
      const grows = { age: "with age", state: "with the state", bounded: "bounded" };
      const rows = [];
      const notes = [];
      for (const [query, q] of Object.entries(data.queries)) {
        const f = q.footprint;
        if (!f) continue;
        for (const [part, size] of Object.entries(f.parts)) {
          rows.push(el("tr", { "data-part": `${query}/${part}` },
            el("td", {}, query), el("td", { class: "mono" }, part),
            el("td", { class: "num" }, String(size.files)),
            el("td", { class: "num" }, fmtBytes(size.bytes)),
            el("td", { class: size.grows === "age" ? "bad" : null }, grows[size.grows] || "")));
        }
        for (const g of f.growing) {
          notes.push(el("p", { class: "notice bad growing" },
            el("b", {}, `${query} · ${g.part} (${fmtBytes(g.bytes)})`),
            ` grows for as long as the query runs: ${g.why}. What to do: ${g.advice}.`));
        }
      }
      return el("div", { id: "checkpoint-size" },
        el("h2", {}, "Checkpoint size on storage"),
        table([["Query"], ["Part"], ["Files", "num"], ["Size", "num"], ["Grows"]], rows,
          "Not measured yet (flinkish.checkpoint.size.interval)."),
        ...notes);
    }

    async function renderSavepoints() {
      const data = await api(`flinkish/jobs/${jid}/savepoints`);
      const rows = data.savepoints.map((r) => el("tr", {},
        el("td", {}, fmtTime(r.time)),
        el("td", {}, r.trigger),
        el("td", {}, badge(r.state)),
        el("td", { class: "num" }, r.size === null ? "—" : fmtBytes(r.size)),
        el("td", { class: "path mono" }, r.path),
        el("td", {}, r.job_id === jid ? "this job" : el("a",
          { href: `#/job/${r.job_id}/savepoints`, class: "mono" }, r.job_id)),
        el("td", {}, r.cause || "")));
      body.replaceChildren(table(
        [["Time"], ["Trigger"], ["State"], ["Size", "num"], ["Path"], ["Job"], ["Cause"]],
        rows, "No savepoint of this job (or of the jobs it was upgraded from) yet."));
    }

    async function renderExceptions() {
      const data = await api(`jobs/${jid}/exceptions?maxExceptions=100`);
      const entries = data.exceptionHistory.entries.map((e) => {
        const first = (e.stacktrace || "").split("\n")[0];
        return el("div", { class: "card exception" },
          el("p", {}, el("b", {}, fmtTime(e.timestamp)), " · ", e.taskName || "the job",
            " · attempt ", e.failureLabels ? e.failureLabels.attempt : "?"),
          el("details", {}, el("summary", {}, first),
            el("pre", { class: "trace" }, e.stacktrace)));
      });
      body.replaceChildren(...(entries.length ? entries
        : [el("p", { class: "empty" }, "No exception: the job has not failed.")]));
    }

    async function renderConfiguration() {
      const data = await api(`jobs/${jid}/config`);
      const conf = data["execution-config"]["user-config"];
      const rows = Object.entries(conf).map(([k, v]) =>
        el("tr", {}, el("td", { class: "mono" }, k), el("td", { class: "mono path" }, v)));
      body.replaceChildren(
        el("p", { class: "muted" }, "The configuration the job was submitted with (secrets are never kept)."),
        table([["Key"], ["Value"]], rows, "No configuration was kept for this job."));
    }

    async function renderGraph() {
      const data = await api(`flinkish/jobs/${jid}/plan`);
      const open = new Set([...body.querySelectorAll("details[open]")]
        .map((d) => d.closest("[data-query]").dataset.query + "/" + d.className));
      body.replaceChildren(...window.flinkishGraph.render(data));
      for (const details of body.querySelectorAll("details")) {  // kept open across refreshes
        if (open.has(details.closest("[data-query]").dataset.query + "/" + details.className)) {
          details.open = true;
        }
      }
    }

    const renderers = {
      graph: renderGraph,
      checkpoints: renderCheckpoints,
      savepoints: renderSavepoints,
      exceptions: renderExceptions,
      configuration: renderConfiguration,
    };

    async function refresh() {
      const job = await api(`jobs/${jid}`);
      renderHeader(job);
      if (autoscalerTab.hidden) {
        autoscalerTab.hidden = !(await window.flinkishAutoscaler.evaluated(jid));
      }
      if (charts) await charts.refresh();
      else await renderers[tab]();
    }
    return { refresh, dispose() { if (charts) charts.dispose(); } };
  }

  // -- the frame -------------------------------------------------------------------------
  async function refreshCounts() {
    const o = await api("overview");
    const counts = document.getElementById("counts");
    counts.replaceChildren(
      el("span", {}, "Running ", el("b", {}, o["jobs-running"])),
      el("span", {}, "Finished ", el("b", {}, o["jobs-finished"])),
      el("span", {}, "Canceled ", el("b", {}, o["jobs-cancelled"])),
      el("span", {}, "Failed ", el("b", {}, o["jobs-failed"])));
  }

  async function tick() {
    const generation = state.generation;
    try {
      if (!state.config) {
        state.config = await api("config");
        document.getElementById("version").textContent = "Flink API · " + state.config["flink-version"];
      }
      await refreshCounts();
      if (state.view) await state.view.refresh();
      if (generation !== state.generation) return;
      problem(null);
      const now = new Date();
      document.getElementById("refreshed").textContent =
        `updated ${pad(now.getHours())}:${pad(now.getMinutes())}:${pad(now.getSeconds())}`;
    } catch (error) {
      if (error instanceof Unauthorized) {
        askToken();
        return;
      }
      if (generation === state.generation) problem(error.message || String(error));
    } finally {
      if (generation === state.generation) schedule();
    }
  }

  function schedule() {
    clearTimeout(state.timer);
    const every = state.config ? Math.max(500, state.config["refresh-interval"]) : 3000;
    state.timer = setTimeout(tick, every);
  }

  function route() {
    state.generation += 1;
    clearTimeout(state.timer);
    if (state.view) state.view.dispose();
    problem(null);
    const match = /^#\/job\/([0-9a-fA-F]{32})(?:\/(\w+))?/.exec(location.hash);
    if (match) {
      const tab = TABS.some(([id]) => id === match[2]) ? match[2] : "overview";
      state.view = jobView(match[1].toLowerCase(), tab);
    } else {
      state.view = overviewView();
    }
    tick();
  }

  function askToken() {
    const dialog = document.getElementById("login");
    if (!dialog.open) dialog.showModal();
  }

  document.getElementById("login-form").addEventListener("submit", () => {
    state.token = document.getElementById("login-token").value;
    sessionStorage.setItem(TOKEN_KEY, state.token);
    route();
  });
  window.addEventListener("hashchange", route);
  route();
})();
