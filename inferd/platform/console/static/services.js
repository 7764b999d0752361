// The console's pictures of services and endpoints: an hour of requests per second and p50/p99 latency
// as small SVG charts (drawn here, no library), and a service's log, followed while it is open.
// console.js calls drawHistory on every refresh and openLog from a service's row; values go in as text.
"use strict";

const consoleServices = (() => {
  const SVG = "http://www.w3.org/2000/svg";
  const WIDTH = 300;
  const HEIGHT = 70;
  const LOG_MS = 2000;
  const LOG_LINES = 200;

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

  // Times are shown in UTC everywhere in the console: "14:05 UTC".
  const clock = (seconds) => `${new Date(seconds * 1000).toISOString().slice(11, 19)} UTC`;

  function number(value, unit) {
    if (value === null || value === undefined) return "–";
    const shown = value >= 100 ? value.toFixed(0) : value >= 10 ? value.toFixed(1) : value.toFixed(2);
    return `${shown} ${unit}`;
  }

  // One small chart: a line per series from the first point kept (an hour ago at most) to `now`, its y
  // axis from 0 to the largest value. A point without a value (no requests then) breaks its line; a
  // value alone between two gaps is a dot.
  function chart(points, now, series, unit, title) {
    const start = Math.max(now - 3600, Math.min(now - 60, ...points.map((p) => p[0])));
    const shown = points.filter((p) => p[0] >= start);
    const values = shown.flatMap((p) => series.map((s) => p[s.index])).filter((v) => v !== null);
    const top = Math.max(...values, 0) || 1;
    const x = (t) => (((t - start) / (now - start)) * WIDTH).toFixed(1);
    const y = (v) => (HEIGHT - (v / top) * (HEIGHT - 4)).toFixed(1);
    const marks = series.flatMap((s) => {
      const runs = [[]];
      for (const p of shown) {
        if (p[s.index] === null) runs.push([]);
        else runs[runs.length - 1].push(p);
      }
      return runs.filter((run) => run.length).map((run) => run.length === 1
        ? svg("path", { d: `M${x(run[0][0])},${y(run[0][s.index])} l0.01,0`, class: `dot ${s.name}`, "data-series": s.name })
        : svg("path", { d: run.map((p, i) => `${i ? "L" : "M"}${x(p[0])},${y(p[s.index])}`).join(" "),
          class: `line ${s.name}`, fill: "none", "data-series": s.name }));
    });
    const drawn = svg("svg", { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, class: "chart", role: "img", "aria-label": title,
      preserveAspectRatio: "none" },
      svg("line", { x1: 0, y1: HEIGHT - 0.5, x2: WIDTH, y2: HEIGHT - 0.5, class: "axis" }),
      ...marks);
    // the latest value of each series (a quantile: of the last interval that had requests)
    const legend = series.map((s) => {
      const latest = [...shown].reverse().find((p) => p[s.index] !== null);
      return el("span", { class: `legend ${s.name}` }, `${s.label} ${number(latest ? latest[s.index] : null, unit)}`);
    });
    return el("figure", { class: "chart" },
      el("figcaption", {}, el("span", { class: "chart-title" }, title), " ", ...legend),
      el("div", { class: "plot" }, el("span", { class: "top" }, number(top, unit)), drawn),
      el("div", { class: "times" }, el("span", {}, clock(start)), el("span", {}, clock(now))));
  }

  function card(key, title, points, now) {
    return el("div", { class: "traffic-card", "data-chart": key },
      el("h3", {}, title),
      chart(points, now, [{ index: 1, name: "rps", label: "now" }], "req/s", "requests per second"),
      chart(points, now, [{ index: 2, name: "p50", label: "p50" }, { index: 3, name: "p99", label: "p99" }], "ms",
        "latency"));
  }

  // The hour of traffic of each service and endpoint of the deployment shown (`history`: the console's
  // /console/api/deployments/NAME/history), into #traffic.
  function drawHistory(history, services, endpoints) {
    const holder = document.getElementById("traffic");
    if (!holder) return;
    if (!history) {
      holder.replaceChildren(el("p", { class: "hint" }, "No traffic history from this control process."));
      return;
    }
    const every = history.interval;
    const cards = [
      ...endpoints.map((e) => card(`endpoint:${e.name}`, `endpoint ${e.name}`, history.endpoints[e.name] || [], history.now)),
      ...services.map((s) => card(`service:${s.id}`, `service ${s.id}`, history.services[s.id] || [], history.now)),
    ];
    holder.replaceChildren(
      el("p", { class: "hint" }, `Up to the last hour, a point every ${every} s (times in UTC); an endpoint's latency is its services'.`),
      el("div", { class: "traffic-cards" }, ...cards));
  }

  // --- a service's log --------------------------------------------------------------------------------

  let following = null;
  let logTimer = null;

  async function pollLog() {
    clearTimeout(logTimer);
    if (!following) return;
    const section = document.getElementById("service-log");
    const pre = document.getElementById("service-log-lines");
    const status = document.getElementById("service-log-status");
    const id = following;
    try {
      const response = await fetch(`/platform/v1/services/${encodeURIComponent(id)}/logs?lines=${LOG_LINES}`,
        { headers: { accept: "application/json" }, credentials: "same-origin" });
      const body = await response.json();
      if (id !== following) return;
      if (!response.ok) throw new Error(body && body.error ? body.error : response.statusText);
      const atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
      pre.textContent = body.lines.length ? body.lines.join("\n") : "(nothing logged yet)";
      if (atEnd || document.getElementById("service-log-follow").checked) pre.scrollTop = pre.scrollHeight;
      status.className = "hint";
      status.textContent = `Last ${LOG_LINES} lines, read ${new Date().toISOString().slice(11, 19)} UTC; every ${LOG_MS / 1000} s.`;
    } catch (failure) {
      status.className = "error";
      status.textContent = `Cannot read the log: ${failure.message}`;
    }
    if (!section.hidden) logTimer = setTimeout(pollLog, LOG_MS);
  }

  // Show service `id`'s log (its last lines, read again every LOG_MS) in #service-log.
  function openLog(id) {
    following = id;
    const section = document.getElementById("service-log");
    document.getElementById("service-log-title").textContent = `Log of service ${id}`;
    document.getElementById("service-log-lines").textContent = "Loading…";
    section.hidden = false;
    section.dataset.service = id;
    section.scrollIntoView({ block: "nearest" });
    pollLog();
  }

  function closeLog() {
    following = null;
    clearTimeout(logTimer);
    document.getElementById("service-log").hidden = true;
  }

  document.addEventListener("DOMContentLoaded", () => {
    const close = document.getElementById("service-log-close");
    if (close) close.addEventListener("click", closeLog);
  });

  return { drawHistory, openLog, closeLog, clock };
})();
