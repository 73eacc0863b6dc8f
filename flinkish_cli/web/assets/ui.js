// The dashboard's small pieces (flinkish web): its constants and state, DOM building,
// the REST calls (with the token, if any) and the formatting of figures. dashboard.js
// builds the views from them. Text from jobs is only ever set as text (never as HTML).
"use strict";

window.flinkishUi = (() => {
  const TABS = [
    ["overview", "Overview"],
    ["graph", "Graph"],
    ["checkpoints", "Checkpoints"],
    ["savepoints", "Savepoints"],
    ["exceptions", "Exceptions"],
    ["configuration", "Configuration"],
    ["state", "State"],
    ["autoscaler", "Autoscaler"], // shown once the autoscaler has evaluated the job
  ];
  const TERMINAL = new Set(["FINISHED", "CANCELED", "FAILED"]);
  const COLOURS = ["#2f6fdb", "#e8710a", "#1b873f", "#c3322b", "#8e44ad", "#8c564b", "#0097a7"];
  const TOKEN_KEY = "flinkish.token";

  const state = {
    config: null,
    token: sessionStorage.getItem(TOKEN_KEY),
    timer: null,
    view: null, // {refresh(): Promise, dispose(): void}
    generation: 0,
  };

  // -- small pieces ----------------------------------------------------------------------
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") node.className = value;
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined) continue;
      node.append(child instanceof Node ? child : String(child));
    }
    return node;
  }

  class Unauthorized extends Error {}

  async function api(path, options = {}) {
    const headers = { Accept: "application/json" };
    if (options.body !== undefined) headers["Content-Type"] = "application/json";
    if (state.token) headers.Authorization = "Bearer " + state.token;
    const response = await fetch(path, { ...options, headers, cache: "no-store" });
    if (response.status === 401) throw new Unauthorized("This endpoint needs its token.");
    let body = {};
    try {
      body = await response.json();
    } catch (error) {
      body = {};
    }
    if (!response.ok) {
      const errors = Array.isArray(body.errors) ? body.errors : [response.statusText];
      throw new Error(errors.join("; ") || "HTTP " + response.status);
    }
    return body;
  }

  function pad(n) {
    return String(n).padStart(2, "0");
  }

  function fmtTime(ms) {
    if (!ms || ms < 0) return "—";
    const d = new Date(ms);
    return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
      `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  }

  function fmtDuration(ms) {
    if (ms === null || ms === undefined || ms < 0) return "—";
    let s = Math.floor(ms / 1000);
    if (s < 60) return ms < 10000 && ms % 1000 ? (ms / 1000).toFixed(1) + " s" : s + " s";
    const d = Math.floor(s / 86400); s -= d * 86400;
    const h = Math.floor(s / 3600); s -= h * 3600;
    const m = Math.floor(s / 60); s -= m * 60;
    if (d) return `${d}d ${h}h`;
    if (h) return `${h}h ${m}m`;
    return `${m}m ${s}s`;
  }

  function fmtAge(ms, now) {
    if (!ms || ms < 0) return "—";
    return fmtDuration(Math.max(0, now - ms)) + " ago";
  }

  function fmtNumber(x) {
    if (x === null || x === undefined || Number.isNaN(x)) return "—";
    const abs = Math.abs(x);
    if (abs >= 1e9) return (x / 1e9).toFixed(1) + "G";
    if (abs >= 1e6) return (x / 1e6).toFixed(1) + "M";
    if (abs >= 1e4) return (x / 1e3).toFixed(1) + "k";
    return Number.isInteger(x) ? String(x) : x.toFixed(1);
  }

  function fmtRate(x) {
    return x === null || x === undefined ? "—" : fmtNumber(x) + "/s";
  }

  function fmtBytes(n) {
    if (n === null || n === undefined) return "—";
    const units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let i = 0;
    while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
    return (i === 0 ? String(n) : n.toFixed(1)) + " " + units[i];
  }

  function badge(value) {
    return el("span", { class: "state state-" + value }, value);
  }

  function table(columns, rows, empty) {
    if (!rows.length) return el("p", { class: "empty" }, empty);
    const head = el("tr", {}, columns.map(([label, cls]) => el("th", { class: cls }, label)));
    return el("div", { class: "table-wrap" },
      el("table", {}, el("thead", {}, head), el("tbody", {}, rows)));
  }

  function facts(pairs) {
    return el("dl", { class: "facts" },
      pairs.filter(([, v]) => v !== null && v !== undefined && v !== "")
        .map(([k, v, wide]) => el("div", { class: wide ? "wide" : null },
          el("dt", {}, k), el("dd", {}, v))));
  }

  // A time chart (uPlot) in box: data is uPlot's ([times, ...values]), one label per line,
  // spec.format formats the values.
  function makeChart(box, spec, data) {
    const width = Math.max(280, box.clientWidth - 16);
    const options = {
      width,
      height: 220,
      legend: { show: true },
      cursor: { drag: { x: true, y: false } },
      scales: { x: { time: true } },
      axes: [{}, { size: 64, values: (u, ticks) => ticks.map((v) => spec.format(v)) }],
      series: [{}, ...data.labels.map((label, i) => ({
        label,
        stroke: COLOURS[i % COLOURS.length],
        width: 1.75,
        spanGaps: true,
        value: (u, v) => (v === null || v === undefined ? "—" : spec.format(v)),
      }))],
    };
    return new uPlot(options, data.data, box);
  }

  function show(...nodes) {
    const main = document.getElementById("main");
    main.replaceChildren(...nodes);
  }

  function problem(text) {
    const box = document.getElementById("problem");
    box.hidden = !text;
    box.textContent = text || "";
  }

  return {
    TABS, TERMINAL, COLOURS, TOKEN_KEY, state, el, Unauthorized, api, pad, fmtTime,
    fmtDuration, fmtAge, fmtNumber, fmtRate, fmtBytes, badge, table, facts, show, problem,
    makeChart,
  };
})();
