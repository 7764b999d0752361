// The try-it page. The forms come from /inferd/api/models/<name>: its "try" object says which request
// the model's dialect takes (see inferd/dialects/base.py, TryForm), so this file knows no dialect.
"use strict";

const inferd = (() => {
  // Where the server's paths start: "" on the server itself, "/e/NAME" through a platform's gateway
  // (the console's "try it through this endpoint"), which hands the rest of the path to the server.
  const at = location.pathname.indexOf("/inferd/");
  const BASE = at > 0 ? location.pathname.slice(0, at) : "";
  const API = `${BASE}/inferd/api/models`;
  const served = (path) => (path.startsWith("/") ? BASE + path : path);

  function el(tag, attrs = {}, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs)) {
      if (value !== null && value !== undefined && value !== false) node.setAttribute(key, value === true ? "" : value);
    }
    node.append(...children.filter((child) => child !== null && child !== undefined));
    return node;
  }

  async function getJSON(url) {
    const response = await fetch(url, { headers: { accept: "application/json" } });
    const text = await response.text();
    if (!response.ok) throw new Error(`${response.status}: ${text}`);
    return JSON.parse(text);
  }

  const tensors = (list) => list.map((t) => `${t.name} ${t.datatype} [${t.shape.join(", ")}]`).join("\n") || "–";
  const requests = (m) => `${m.requests.ok} ok` + (m.requests.error ? `, ${m.requests.error} failed` : "");
  const latency = (m) => (m.latency_ms === null ? "–" : `${m.latency_ms} ms`);
  const source = (m) => (m.source ? m.source + (m.cache ? ` (${m.cache})` : "") : "–");
  const state = (m) => el("span", { class: m.ready ? "badge ready" : "badge" }, m.state.toLowerCase());
  const modelLink = (name) => `${BASE}/inferd/models/${encodeURIComponent(name)}`;

  function fail(message) {
    const status = document.getElementById("status");
    status.textContent = message;
    status.className = "error";
  }

  // --- the list of models ---------------------------------------------------------------------------

  function row(m) {
    return el(
      "tr",
      { "data-model": m.name },
      el("td", {}, el("a", { href: modelLink(m.name) }, m.name), m.version ? ` (version ${m.version})` : ""),
      el("td", {}, m.dialect),
      el("td", {}, state(m), m.reason ? el("small", { class: "hint" }, ` ${m.reason}`) : null),
      el("td", { class: "source" }, source(m)),
      el("td", { class: "tensors" }, tensors(m.inputs)),
      el("td", { class: "tensors" }, tensors(m.outputs)),
      el("td", { class: "number" }, requests(m)),
      el("td", { class: "number" }, latency(m)),
    );
  }

  async function index() {
    let listing;
    try {
      listing = await getJSON(API);
    } catch (error) {
      return fail(`Cannot list the models: ${error.message}`);
    }
    showServer(listing.server);
    document.querySelector("#models tbody").replaceChildren(...listing.models.map(row));
    document.getElementById("models").hidden = false;
    const count = listing.models.length;
    document.getElementById("status").textContent = `${count} model${count === 1 ? "" : "s"} served here.`;
  }

  // --- form pieces ----------------------------------------------------------------------------------

  function field(id, label, control, note) {
    return el("div", { class: "field" }, el("label", { for: id }, ...label), control, note);
  }

  // A JSON editor: checked as you type, with a button that re-indents it.
  function jsonEditor(id, label, value) {
    const area = el("textarea", { id, name: id, spellcheck: "false", rows: 8 });
    area.value = value === null || value === undefined ? "" : JSON.stringify(value, null, 2);
    const note = el("small", { id: `${id}-note` });
    const check = () => {
      try {
        if (area.value.trim()) JSON.parse(area.value);
        area.classList.remove("invalid");
        note.textContent = "";
        note.className = "";
        return true;
      } catch (error) {
        area.classList.add("invalid");
        note.textContent = `Not valid JSON: ${error.message}`;
        note.className = "problem";
        return false;
      }
    };
    area.addEventListener("input", check);
    const format = el("button", { type: "button", class: "link" }, "format");
    format.addEventListener("click", () => {
      if (check() && area.value.trim()) area.value = JSON.stringify(JSON.parse(area.value), null, 2);
    });
    return {
      node: field(id, [label, " ", format], area, note),
      read() {
        if (!check()) throw new Error(`${label} is not valid JSON`);
        return area.value.trim() ? JSON.parse(area.value) : null;
      },
    };
  }

  function fileInput(id, label, accept, hint) {
    const input = el("input", { type: "file", id, name: id, accept });
    return { node: field(id, [label], input, el("small", {}, hint)), file: () => input.files[0] || null };
  }

  const jsonRequest = (form, body) => ({
    method: form.method,
    url: served(form.path),
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });

  // The shape of a nested array (a scalar is one value).
  function shapeOf(data) {
    const shape = [];
    for (let value = data; Array.isArray(value); value = value[0]) shape.push(value.length);
    return shape;
  }

  // --- one builder per kind of form: nodes to show, and how to make the request from them ------------

  const FORMS = {
    // V2: one JSON value per declared input, sent as an infer request (or the whole request).
    v2(form) {
      if (!form.fields.length) {
        const editor = jsonEditor("request", "V2 inference request", form.example);
        return { nodes: [editor.node], request: () => jsonRequest(form, editor.read()) };
      }
      const editors = form.fields.map((spec) => ({
        spec,
        editor: jsonEditor(`input-${spec.name}`, `${spec.name} (${spec.datatype}, shape [${spec.shape.join(", ")}])`,
          form.example[spec.name]),
      }));
      const tensor = ({ spec, editor }) => {
        const value = editor.read();
        const data = Array.isArray(value) ? value : [value];
        return { name: spec.name, datatype: spec.datatype, shape: shapeOf(data), data };
      };
      return { nodes: editors.map((e) => e.editor.node), request: () => jsonRequest(form, { inputs: editors.map(tensor) }) };
    },

    // A JSON document sent as it is (Seldon messages, Cortex samples).
    json(form) {
      const editor = jsonEditor("body", "Request body (JSON)", form.example);
      return { nodes: [editor.node], request: () => jsonRequest(form, editor.read()) };
    },

    // Named arguments (DEEPaaS): query and form fields, headers, uploads.
    fields(form) {
      const controls = form.fields.map(argumentControl);
      const request = () => {
        const url = new URL(served(form.path), location.href);
        const headers = {};
        const data = new FormData();
        for (const control of controls) {
          const values = control.values();
          for (const value of values) {
            if (control.param.in === "header") headers[control.param.name] = value;
            else if (control.param.in === "query") url.searchParams.append(control.param.name, value);
            else data.append(control.param.name, value);
          }
        }
        return { method: form.method, url: url.toString(), headers, body: data };
      };
      return { nodes: controls.map((c) => c.node), request };
    },

    // A raw body: a JSON document, or a file sent with its own content type (ABEJA).
    body(form) {
      const editor = jsonEditor("body", "JSON body", form.example);
      const upload = fileInput("upload", "…or a file", "image/*,video/*,*/*", "An image, a video or any file: sent as the body, with its type.");
      const request = () => {
        const file = upload.file();
        if (file) return { method: form.method, url: served(form.path), headers: { "content-type": file.type || "application/octet-stream" }, body: file };
        return jsonRequest(form, editor.read());
      };
      return { nodes: [editor.node, upload.node], request };
    },
  };

  // One DEEPaaS argument (a Swagger 2.0 parameter) as a form control.
  function argumentControl(param) {
    const id = `arg-${param.name}`;
    const required = param.required ? " *" : "";
    const label = [param.name, el("small", { style: "display:inline" }, ` ${param.type}${required}`)];
    const note = el("small", {}, param.description || "");
    let control;
    let values;
    if (param.type === "file") {
      control = el("input", { type: "file", id, name: param.name, required: param.required });
      values = () => Array.from(control.files);
    } else {
      const choices = param.enum || (param.type === "boolean" ? [true, false] : null);
      if (choices) {
        control = el("select", { id, name: param.name }, param.required ? null : el("option", { value: "" }, ""),
          ...choices.map((choice) => el("option", { value: String(choice), selected: String(choice) === String(param.default) }, String(choice))));
      } else {
        const numeric = param.type === "number" || param.type === "integer";
        control = el("input", { type: numeric ? "number" : "text", step: numeric ? "any" : null, id, name: param.name, required: param.required });
        if (param.default !== undefined) control.value = String(param.default);
        if (param.type === "array") note.append(" Several values: separate them with commas.");
      }
      values = () => {
        const text = control.value.trim();
        if (!text) return [];
        return param.type === "array" ? text.split(",").map((part) => part.trim()) : [text];
      };
    }
    return { param, node: field(id, label, control, note), values };
  }

  // --- the answer -----------------------------------------------------------------------------------

  async function showAnswer(response, milliseconds) {
    const status = document.getElementById("answer-status");
    status.textContent = `${response.status} ${response.statusText} · ${milliseconds} ms`;
    status.className = response.ok ? "status-ok" : "status-bad";
    const type = (response.headers.get("content-type") || "").toLowerCase();
    let shown;
    if (type.startsWith("image/") || type.startsWith("video/")) {
      const url = URL.createObjectURL(await response.blob());
      shown = type.startsWith("image/")
        ? el("img", { id: "answer-image", src: url, alt: "the answer" })
        : el("video", { id: "answer-video", src: url, controls: true });
    } else {
      const text = await response.text();
      let pretty = text;
      try {
        pretty = JSON.stringify(JSON.parse(text), null, 2);
      } catch (_) {
        // not JSON: shown as it came
      }
      shown = el("pre", { id: type.includes("json") ? "answer-json" : "answer-text" }, pretty);
    }
    document.getElementById("answer-body").replaceChildren(shown);
    document.getElementById("answer").hidden = false;
  }

  function summary(m) {
    const items = [
      ["Dialect", m.dialect],
      ["State", state(m)],
      ["Version", m.version || "–"],
      ["Source", source(m)],
      ["Inputs", el("span", { class: "tensors" }, tensors(m.inputs))],
      ["Outputs", el("span", { class: "tensors" }, tensors(m.outputs))],
      ["Requests", requests(m)],
      ["Mean latency", latency(m)],
    ];
    return items.flatMap(([term, value]) => [el("dt", {}, term), el("dd", {}, value)]);
  }

  // --- the model's traffic and latency, sampled by this page every ACTIVITY_MS ---------------------

  const ACTIVITY_MS = 2000;
  const ACTIVITY_POINTS = 300; // ten minutes
  const SVG = "http://www.w3.org/2000/svg";

  function svg(tag, attrs = {}, ...children) {
    const node = document.createElementNS(SVG, tag);
    for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, String(value));
    node.append(...children);
    return node;
  }

  // A small chart of `points` ([time ms, value or null]) for `key`, y from 0 to the largest value.
  function chart(key, title, unit, points) {
    const [width, height] = [300, 60];
    const first = points.length ? points[0][0] : 0;
    const span = Math.max(60_000, (points.length ? points[points.length - 1][0] : 0) - first);
    const values = points.map((p) => p[1]).filter((v) => v !== null);
    const top = Math.max(...values, 0) || 1;
    const xy = (p) => `${(((p[0] - first) / span) * width).toFixed(1)},${(height - (p[1] / top) * (height - 4)).toFixed(1)}`;
    const runs = [[]];
    for (const p of points) {
      if (p[1] === null) runs.push([]);
      else runs[runs.length - 1].push(p);
    }
    const marks = runs.filter((run) => run.length).map((run) => run.length === 1
      ? svg("path", { d: `M${xy(run[0])} l0.01,0`, class: "dot" })
      : svg("path", { d: `M${run.map(xy).join(" L")}`, class: "line", fill: "none" }));
    const latest = [...values].pop();
    const shown = (v) => (v === undefined ? "–" : `${v >= 10 ? v.toFixed(1) : v.toFixed(2)} ${unit}`);
    return el("figure", { class: "chart", "data-chart": key },
      el("figcaption", {}, title, " ", el("strong", {}, shown(latest)), el("small", { class: "hint" }, ` (top ${shown(top)})`)),
      svg("svg", { viewBox: `0 0 ${width} ${height}`, preserveAspectRatio: "none", class: "chart", role: "img", "aria-label": title },
        svg("line", { x1: 0, y1: height - 0.5, x2: width, y2: height - 0.5, class: "axis" }), ...marks));
  }

  // Every ACTIVITY_MS: the model's counts again; requests per second and the mean latency of the
  // requests answered in between (none answered: no latency) become a point each.
  function follow(name, first) {
    const rates = [];
    const latencies = [];
    let before = { at: Date.now(), m: first };
    const total = (m) => m.requests.ok + m.requests.error;
    const draw = () => {
      document.getElementById("charts").replaceChildren(
        chart("rps", "Requests per second", "req/s", rates), chart("latency", "Mean latency", "ms", latencies));
      document.getElementById("activity-note").textContent =
        `since this page opened, a point every ${ACTIVITY_MS / 1000} s`;
      document.getElementById("activity").hidden = false;
    };
    draw();
    const tick = async () => {
      try {
        const now = await getJSON(`${API}/${encodeURIComponent(name)}`);
        const at = Date.now();
        const answered = total(now) - total(before.m);
        const seconds = (at - before.at) / 1000;
        if (answered >= 0 && seconds > 0) {
          const spent = (now.latency_ms || 0) * total(now) - (before.m.latency_ms || 0) * total(before.m);
          rates.push([at, answered / seconds]);
          latencies.push([at, answered > 0 ? Math.max(0, spent / answered) : null]);
          if (rates.length > ACTIVITY_POINTS) rates.shift(), latencies.shift();
        }
        before = { at, m: now };
        document.getElementById("summary").replaceChildren(...summary(now));
        draw();
      } catch (_) {
        // the server is away for now: the next tick tries again
      }
      setTimeout(tick, ACTIVITY_MS);
    };
    setTimeout(tick, ACTIVITY_MS);
  }

  function showServer(server) {
    if (server) document.getElementById("server").textContent = `${server.name} ${server.version}`;
  }

  async function model() {
    const name = decodeURIComponent(location.pathname.replace(/\/$/, "").split("/").pop());
    document.title = `inferd: ${name}`;
    document.getElementById("name").textContent = name;
    let described;
    try {
      described = await getJSON(`${API}/${encodeURIComponent(name)}`);
    } catch (error) {
      return fail(`Cannot describe model ${name}: ${error.message}`);
    }
    showServer(described.server);
    document.getElementById("summary").replaceChildren(...summary(described));
    follow(name, described);
    const form = described.try;
    if (!form) return fail(`Model ${name} is not ready${described.reason ? ` (${described.reason})` : ""}.`);
    document.getElementById("status").textContent = "";
    const built = FORMS[form.kind](form);
    document.getElementById("route").textContent = `Sends ${form.method} ${form.path}`;
    const from = described.example_from;
    document.getElementById("example-from").textContent = from === "zeros"
      ? "Filled with zeros: the model has no example (request.json or sample.json beside it) and has answered no request yet."
      : `Filled from ${from}.`;
    document.getElementById("fields").replaceChildren(...built.nodes);
    const element = document.getElementById("try");
    element.hidden = false;
    element.addEventListener("submit", async (event) => {
      event.preventDefault();
      const button = document.getElementById("send");
      button.disabled = true;
      try {
        const { url, ...init } = built.request();
        const started = performance.now();
        const response = await fetch(url, init);
        await showAnswer(response, Math.round(performance.now() - started));
      } catch (error) {
        document.getElementById("answer-status").textContent = "";
        document.getElementById("answer-body").replaceChildren(el("p", { class: "error", id: "answer-error" }, error.message));
        document.getElementById("answer").hidden = false;
      } finally {
        button.disabled = false;
      }
    });
  }

  return { index, model };
})();
