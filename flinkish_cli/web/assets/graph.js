// The job graph in the dashboard (the Graph tab): each query's operators and the exchanges
// between them, laid out by dagre (vendor/dagre.min.js, MIT) and drawn as SVG, each node
// with its latest figures, from GET /flinkish/jobs/:jobid/plan. Text from jobs is only ever
// set as text (never as HTML); nothing is styled inline (the page's CSP forbids it): shapes
// carry classes and SVG attributes.
"use strict";

window.flinkishGraph = (() => {
  const { el, fmtNumber, fmtRate, fmtBytes, fmtDuration, fmtTime, table } = window.flinkishUi;
  const SVG = "http://www.w3.org/2000/svg";
  const WIDTH = 230;
  const LINE = 15;
  const CHARS = 35; // what fits a line of a node

  function svg(tag, attrs, ...children) {
    const node = document.createElementNS(SVG, tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value !== null && value !== undefined) node.setAttribute(key, String(value));
    }
    for (const child of children) if (child) node.append(child);
    return node;
  }

  function text(x, y, content, cls) {
    const node = svg("text", { x, y, class: cls });
    node.textContent = content;
    return node;
  }

  function cut(value, chars) {
    const s = String(value);
    return s.length <= chars ? s : s.slice(0, chars - 1) + "…";
  }

  function pct(ms) {
    return ms === null || ms === undefined ? "—" : Math.round(ms / 10) + "%";
  }

  function offset(value) {
    if (value === null || value === undefined) return null;
    return typeof value === "string" ? value : JSON.stringify(value);
  }

  // The lines a node shows: its details, then its figures (the latest batch's).
  function lines(node) {
    const m = node.metrics;
    const out = [];
    if (node.description) out.push(["detail", cut(node.description, CHARS)]);
    if (node.kind === "stateful") {
      out.push(["detail", cut(`operator ${node["operator-id"]} · ${node.partitions} partitions`, CHARS)]);
      if (node.stores.length) out.push(["detail", cut("stores " + node.stores.join(", "), CHARS)]);
      if (node["state-variables"].length) {
        out.push(["detail", cut("state " + node["state-variables"].join(", "), CHARS)]);
      }
      out.push(["figure", `state ${fmtNumber(m["state-rows"])} rows · ${fmtNumber(m["state-rows-updated"])} updated`]);
      out.push(["figure", `memory ${fmtBytes(m["state-memory-bytes"])} · dropped ${fmtNumber(m["rows-dropped-by-watermark"])}`]);
    }
    if (node.kind === "source") {
      out.push(["figure", `in ${fmtRate(m["input-rows-per-second"])} · processed ${fmtRate(m["processed-rows-per-second"])}`]);
      const end = offset(m["end-offset"]);
      if (end !== null) out.push(["figure", cut("offset " + end, CHARS)]);
    } else {
      out.push(["figure", `in ${fmtRate(m["input-rows-per-second"])} · processed ${fmtRate(m["processed-rows-per-second"])}`]);
    }
    if (node.kind === "sink" && m["output-rows"] !== null && m["output-rows"] !== undefined) {
      out.push(["figure", `rows out ${fmtNumber(m["output-rows"])}`]);
    }
    if ((node.kind === "watermark" || node.kind === "stateful") && m.watermark) {
      out.push(["figure", "watermark " + m.watermark.replace("T", " ").replace(/\.\d+Z$/, "")]);
    }
    return out;
  }

  // An exchange's label (a forward edge has none: most edges are forward).
  function edgeLabel(edge) {
    if (edge["ship-strategy"] === "FORWARD" && !edge.side) return "";
    let label = edge["ship-strategy"];
    if (edge.keys.length) label += " " + edge.keys.join(", ");
    if (edge.partitions) label += " → " + edge.partitions;
    if (edge.side) label = edge.side + ": " + label;
    return cut(label, 44);
  }

  function draw(query, index) {
    const g = new dagre.graphlib.Graph();
    g.setGraph({ rankdir: "LR", nodesep: 20, ranksep: 45, marginx: 8, marginy: 8 });
    g.setDefaultEdgeLabel(() => ({}));
    const shown = {};
    for (const node of query.nodes) {
      shown[node.id] = lines(node);
      g.setNode(node.id, { width: WIDTH, height: 30 + LINE * shown[node.id].length + 10, node });
    }
    for (const edge of query.edges) {
      const label = edgeLabel(edge);
      const room = label ? { width: label.length * 6.2, height: 14, labelpos: "c" } : {};
      g.setEdge(edge.source, edge.target, { edge, label, ...room });
    }
    dagre.layout(g);
    const size = g.graph();
    const marker = `arrow-${index}`;
    const root = svg("svg", {
      class: "graph", width: Math.ceil(size.width), height: Math.ceil(size.height),
      viewBox: `0 0 ${Math.ceil(size.width)} ${Math.ceil(size.height)}`, role: "img",
      "aria-label": `Graph of query ${query.query}`,
    }, svg("defs", {}, svg("marker", {
      id: marker, viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 8, markerHeight: 8,
      orient: "auto-start-reverse",
    }, svg("path", { d: "M 0 0 L 10 5 L 0 10 z", class: "arrow" }))));
    for (const e of g.edges()) {
      const data = g.edge(e);
      const d = data.points.map((p, i) => `${i ? "L" : "M"} ${p.x.toFixed(1)} ${p.y.toFixed(1)}`).join(" ");
      const strategy = data.edge["ship-strategy"];
      root.append(svg("g", {
        class: "graph-edge ship-" + strategy.toLowerCase(), "data-source": e.v, "data-target": e.w,
      }, svg("path", { d, "marker-end": `url(#${marker})` }),
      data.label ? text(data.x, data.y + 4, data.label, "edge-label") : null));
    }
    for (const id of g.nodes()) {
      const box = g.node(id);
      const node = box.node;
      const x = box.x - box.width / 2;
      const y = box.y - box.height / 2;
      const group = svg("g", {
        class: `graph-node kind-${node.kind}`, "data-node": id, "data-kind": node.kind,
        transform: `translate(${x.toFixed(1)},${y.toFixed(1)})`,
      });
      const tip = svg("title", {});
      tip.textContent = [node.label, node.description, (node.chain || []).join(" → ")]
        .filter(Boolean).join("\n");
      group.append(tip, svg("rect", { width: box.width, height: box.height, rx: 6, class: "box" }));
      group.append(text(10, 19, cut(node.label, 31), "title"));
      shown[id].forEach(([cls, line], i) => group.append(text(10, 38 + i * LINE, line, cls)));
      // Flink's busy (blue) and back-pressured (red) time of each second, as a bar
      const span = box.width - 2;
      const busy = span * Math.min(1, (node.metrics["busy-time-ms-per-second"] || 0) / 1000);
      const pressured = Math.min(span - busy,
        span * (node.metrics["backpressured-time-ms-per-second"] || 0) / 1000);
      group.append(svg("rect", { x: 1, y: box.height - 5, width: busy.toFixed(1), height: 4, class: "busy" }));
      group.append(svg("rect", { x: (1 + busy).toFixed(1), y: box.height - 5, width: pressured.toFixed(1), height: 4, class: "busy pressured" }));
      root.append(group);
    }
    return root;
  }

  function render(data) {
    const sections = Object.values(data.queries).map((query, index) => {
      const f = query.figures;
      const facts = [
        f.batch === null ? "no batch yet" : `batch ${f.batch} at ${fmtTime(f.time)}`,
        `busy ${pct(f["busy-time-ms-per-second"])} · back-pressured ${pct(f["backpressured-time-ms-per-second"])} · idle ${pct(f["idle-time-ms-per-second"])}`,
        f["trigger-ms"] ? `trigger every ${fmtDuration(f["trigger-ms"])}` : null,
        `in ${fmtRate(f["input-rows-per-second"])} · processed ${fmtRate(f["processed-rows-per-second"])}`,
        f.watermark ? "watermark " + f.watermark : null,
      ].filter(Boolean).join(" · ");
      const parts = [el("h2", {}, query.query, " ", el("span", { class: "muted small" }, facts))];
      if (!query.nodes.length) {
        parts.push(el("p", { class: "empty" }, "No graph yet: it is recorded at the query's first completed batch."));
      } else {
        if (!query.complete) {
          parts.push(el("p", { class: "notice" }, "From the query's progress report: Spark has not explained its plan yet (no exchanges shown)."));
        }
        parts.push(el("div", { class: "graph-wrap" }, draw(query, index)));
        parts.push(legend(query));
      }
      if (query.plan) {
        parts.push(el("details", {}, el("summary", {}, "Spark's physical plan"),
          el("pre", { class: "trace" }, query.plan)));
      }
      return el("section", { class: "card graph-query", "data-query": query.query }, ...parts);
    });
    return sections.length ? sections
      : [el("p", { class: "empty" }, "No query has started yet.")];
  }

  // The operators as a table too: every figure, for reading and for copying.
  function legend(query) {
    const names = Object.fromEntries(query.nodes.map((n) => [n.id, n.label]));
    const rows = query.nodes.map((n) => el("tr", { "data-node": n.id },
      el("td", {}, n.label),
      el("td", { class: "mono" }, (n.chain || []).join(" → ")),
      el("td", {}, query.edges.filter((e) => e.target === n.id)
        .map((e) => `${names[e.source]} (${edgeLabel(e)})`).join("; ")),
      el("td", { class: "num" }, fmtRate(n.metrics["input-rows-per-second"])),
      el("td", { class: "num" }, n.kind === "stateful" ? fmtNumber(n.metrics["state-rows"]) : "—"),
      el("td", { class: "num" }, n.kind === "stateful" ? fmtBytes(n.metrics["state-memory-bytes"]) : "—"),
      el("td", { class: "num" }, pct(n.metrics["busy-time-ms-per-second"]))));
    return el("details", { class: "graph-table" }, el("summary", {}, "Operators"),
      table([["Operator"], ["Chained Spark operators"], ["Inputs"], ["In", "num"],
        ["State rows", "num"], ["State memory", "num"], ["Busy", "num"]], rows, ""));
  }

  return { render };
})();
