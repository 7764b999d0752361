// The console's training section: ABEJA training's job definitions, their jobs (status, times, last
// statistics) with each job's curves, and their training models. It reads the control API's read-only
// /platform/v1/training (and each job's statistics history); every value is put in the page as text.
// The curves are small SVG line charts drawn here (no library): loss and accuracy per epoch, one line
// per stage (train, validation), from what abeja.train.Client().update_statistics reported.
"use strict";

const training = (() => {
  const API = "/platform/v1/training";
  const SVG = "http://www.w3.org/2000/svg";
  const METRICS = ["loss", "accuracy"];
  const COLOURS = { train: "#2f6fdf", validation: "#e0642b" };
  const OTHER_COLOURS = ["#2a9d5c", "#8e44ad", "#b8860b", "#555"];
  const WIDTH = 300;
  const HEIGHT = 130;
  const PAD = { left: 38, right: 10, top: 22, bottom: 20 };

  function el(tag, attrs = {}, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs)) {
      if (value !== null && value !== undefined && value !== false) node.setAttribute(key, value === true ? "" : value);
    }
    node.append(...children.filter((child) => child !== null && child !== undefined));
    return node;
  }

  function svg(tag, attrs = {}, ...children) {
    const node = document.createElementNS(SVG, tag);
    for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, String(value));
    node.append(...children);
    return node;
  }

  async function get(url) {
    const response = await fetch(url, { headers: { accept: "application/json" }, credentials: "same-origin" });
    if (!response.ok) {
      const error = new Error(`${url}: ${response.status}`);
      error.status = response.status;
      throw error;
    }
    return response.json();
  }

  const time = (iso) => (iso ? iso.replace("T", " ").replace(/\.\d+/, "").replace(/\+00:00$/, " UTC") : "–");
  const number = (value) => (typeof value === "number" && Number.isFinite(value) ? value : null);
  const short = (value) => (Number.isInteger(value) ? String(value) : Math.abs(value) >= 100 ? value.toFixed(0) : Math.abs(value) >= 1 ? value.toFixed(2) : value.toPrecision(2));

  function badge(status) {
    const kind = { Complete: "ready", Active: "pending", Pending: "pending", Stopped: "idle", Failed: "failed" }[status];
    return el("span", { class: kind ? `badge ${kind}` : "badge", "data-status": status }, status);
  }

  // The series of one history: {metric: {stage: [[x, y], ...]}}, x the report's epoch (else its place).
  // A report's stages (ABEJA's Statistics: {"epoch", "stages": {"train": {"loss", "accuracy"}}}) give a
  // line each; a metric at the top of a report (a flat {"epoch", "loss"}) is the "" stage.
  function seriesOf(history) {
    const series = Object.fromEntries(METRICS.map((metric) => [metric, {}]));
    history.forEach((entry, index) => {
      const report = entry && typeof entry.statistics === "object" && entry.statistics ? entry.statistics : {};
      const x = number(report.epoch) ?? index + 1;
      const stages = typeof report.stages === "object" && report.stages ? Object.entries(report.stages) : [];
      for (const [stage, values] of [["", report], ...stages]) {
        if (!values || typeof values !== "object") continue;
        for (const metric of METRICS) {
          const y = number(values[metric]);
          if (y === null) continue;
          (series[metric][stage] ||= []).push([x, y]);
        }
      }
    });
    return series;
  }

  function colour(stage, index) {
    return COLOURS[stage] || OTHER_COLOURS[index % OTHER_COLOURS.length];
  }

  // One metric's chart: its lines (a point per report), axes with the range of x and y, a legend.
  function chart(metric, lines) {
    const stages = Object.keys(lines);
    const points = stages.flatMap((stage) => lines[stage]);
    const box = svg("svg", { class: "chart", "data-metric": metric, width: WIDTH, height: HEIGHT,
      viewBox: `0 0 ${WIDTH} ${HEIGHT}`, role: "img" });
    box.append(svg("title", {}, `${metric} per epoch`));
    box.append(svg("text", { x: PAD.left, y: 12, class: "chart-title" }, metric));
    if (!points.length) {
      box.append(svg("text", { x: WIDTH / 2, y: HEIGHT / 2, class: "chart-empty", "text-anchor": "middle" }, "no reports"));
      return box;
    }
    const xs = points.map(([x]) => x);
    const ys = points.map(([, y]) => y);
    let [x0, x1] = [Math.min(...xs), Math.max(...xs)];
    let [y0, y1] = [Math.min(...ys), Math.max(...ys)];
    if (x0 === x1) [x0, x1] = [x0 - 1, x1 + 1];
    if (y0 === y1) [y0, y1] = [y0 - Math.abs(y0 || 1) * 0.1, y1 + Math.abs(y1 || 1) * 0.1];
    const plotW = WIDTH - PAD.left - PAD.right;
    const plotH = HEIGHT - PAD.top - PAD.bottom;
    const sx = (x) => PAD.left + ((x - x0) / (x1 - x0)) * plotW;
    const sy = (y) => PAD.top + (1 - (y - y0) / (y1 - y0)) * plotH;
    const bottom = PAD.top + plotH;
    box.append(
      svg("line", { class: "axis", x1: PAD.left, y1: PAD.top, x2: PAD.left, y2: bottom }),
      svg("line", { class: "axis", x1: PAD.left, y1: bottom, x2: WIDTH - PAD.right, y2: bottom }),
      svg("text", { class: "tick", x: PAD.left - 3, y: PAD.top + 4, "text-anchor": "end" }, short(y1)),
      svg("text", { class: "tick", x: PAD.left - 3, y: bottom, "text-anchor": "end" }, short(y0)),
      svg("text", { class: "tick", x: PAD.left, y: HEIGHT - 6, "text-anchor": "middle" }, short(x0)),
      svg("text", { class: "tick", x: WIDTH - PAD.right, y: HEIGHT - 6, "text-anchor": "end" }, short(x1)),
      svg("text", { class: "tick", x: PAD.left + plotW / 2, y: HEIGHT - 6, "text-anchor": "middle" }, "epoch"),
    );
    stages.forEach((stage, index) => {
      const line = [...lines[stage]].sort((a, b) => a[0] - b[0]);
      const stroke = colour(stage, index);
      const d = line.map(([x, y], i) => `${i ? "L" : "M"}${sx(x).toFixed(1)},${sy(y).toFixed(1)}`).join(" ");
      box.append(svg("path", { class: "line", d, stroke, fill: "none", "data-stage": stage || "all", "data-points": line.length }));
      for (const [x, y] of line) box.append(svg("circle", { cx: sx(x).toFixed(1), cy: sy(y).toFixed(1), r: 2, fill: stroke }));
      if (stage) {
        // the legend, in the top margin from the right: "train  validation"
        const lx = WIDTH - PAD.right - (stages.length - 1 - index) * 60;
        box.append(svg("text", { class: "legend", x: lx, y: 12, "text-anchor": "end", fill: stroke }, stage));
      }
    });
    return box;
  }

  function curves(history) {
    const series = seriesOf(history);
    return el("div", { class: "curves" }, ...METRICS.map((metric) => chart(metric, series[metric])));
  }

  // The last statistics as a short line of text ("epoch 3/10 · train loss 0.21, accuracy 0.93").
  function lastStatistics(statistics) {
    if (!statistics || typeof statistics !== "object") return "–";
    const parts = [];
    if (number(statistics.epoch) !== null) {
      parts.push(`epoch ${statistics.epoch}${number(statistics.num_epochs) !== null ? `/${statistics.num_epochs}` : ""}`);
    }
    const stages = typeof statistics.stages === "object" && statistics.stages ? Object.entries(statistics.stages) : [];
    for (const [stage, values] of [["", statistics], ...stages]) {
      if (!values || typeof values !== "object") continue;
      const shown = METRICS.filter((m) => number(values[m]) !== null).map((m) => `${m} ${short(values[m])}`);
      if (shown.length) parts.push(`${stage ? `${stage} ` : ""}${shown.join(", ")}`);
    }
    return parts.length ? parts.join(" · ") : JSON.stringify(statistics).slice(0, 120);
  }

  const histories = new Map(); // job id -> {stamp, history}

  async function historyOf(job) {
    const known = histories.get(job.id);
    if (known && known.stamp === job.modified_at) return known.history;
    const found = await get(`${API}/jobs/${encodeURIComponent(job.id)}/statistics`);
    histories.set(job.id, { stamp: job.modified_at, history: found.history });
    return found.history;
  }

  async function jobRows(jobs) {
    const each = await Promise.all(jobs.map((job) => (job.statistics ? historyOf(job) : Promise.resolve([]))));
    // a job is two rows: what it is, then (under it, the table's width) its curves
    return jobs.flatMap((job, index) => [
      el("tr", { "data-job": job.id, class: "job" },
        el("td", { class: "id" }, job.id, job.description ? el("div", { class: "hint description" }, job.description) : null),
        el("td", { class: "number" }, String(job.version)),
        el("td", { class: "status" }, badge(job.status), job.reason ? el("div", { class: "hint reason" }, job.reason) : null),
        el("td", {}, time(job.created_at)),
        el("td", {}, time(job.start_time)),
        el("td", {}, time(job.completion_time)),
        el("td", { class: "statistics" }, lastStatistics(job.statistics))),
      el("tr", { "data-job": job.id, class: "job-curves" },
        el("td", { colspan: 7 }, each[index].length ? curves(each[index]) : el("span", { class: "hint" }, "no statistics reported"))),
    ]);
  }

  function table(className, headings, rows, emptyText) {
    const body = rows.length ? rows : [el("tr", {}, el("td", { colspan: headings.length, class: "hint" }, emptyText))];
    return el("table", { class: className },
      el("thead", {}, el("tr", {}, ...headings.map((h) => el("th", {}, h)))),
      el("tbody", {}, ...body));
  }

  async function definitionBlock(definition) {
    const versions = definition.versions.map((v) =>
      el("tr", { "data-version": String(v.number) },
        el("td", { class: "number" }, String(v.number)),
        el("td", { class: "id" }, v.handler),
        el("td", { class: "id" }, v.image),
        el("td", { class: "description" }, v.description || ""),
        el("td", {}, v.archived ? "archived" : ""),
        el("td", {}, time(v.created_at))));
    const models = definition.models.map((m) =>
      el("tr", { "data-model": m.id },
        el("td", { class: "id" }, m.id),
        el("td", { class: "id" }, m.training_job_id || "–"),
        el("td", { class: "description" }, m.description || ""),
        el("td", {}, m.archived ? "archived" : ""),
        el("td", {}, time(m.created_at))));
    const more = definition.job_count > definition.jobs.length
      ? el("p", { class: "hint" }, `The newest ${definition.jobs.length} of ${definition.job_count} jobs.`)
      : null;
    return el("section", { class: "definition", "data-definition": definition.name },
      el("h2", {}, definition.name, " ", el("small", { class: "hint" }, el("code", {}, definition.id)),
        definition.archived ? el("small", { class: "hint" }, " (archived)") : null),
      el("h3", {}, "Versions"),
      table("versions", ["Version", "Handler", "Image", "Description", "", "Created"], versions, "No versions."),
      el("h3", {}, "Jobs"),
      table("jobs", ["Job", "Version", "Status", "Created", "Started", "Finished", "Last statistics"],
        await jobRows(definition.jobs), "No jobs."),
      more,
      el("h3", {}, "Training models"),
      table("models", ["Model", "From job", "Description", "", "Created"], models, "No training models."));
  }

  let shown = null;

  // Draw the section from the API (again only when what it said changed); hidden where this control
  // process serves no training (404) or has no definitions.
  async function refresh() {
    const section = document.querySelector("#training-section");
    let found;
    try {
      found = await get(API);
    } catch (failure) {
      if (failure.status === 404 || failure.status === 405) {
        section.hidden = true;
        return;
      }
      throw failure;
    }
    const text = JSON.stringify(found);
    if (text === shown) return;
    const blocks = await Promise.all(found.definitions.map(definitionBlock));
    document.querySelector("#training").replaceChildren(...blocks);
    section.hidden = found.definitions.length === 0;
    shown = text;
  }

  return { refresh, seriesOf };
})();
