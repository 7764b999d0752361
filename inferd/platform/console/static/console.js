// The platform console. Everything it shows comes from the control API (/platform/v1) and every change
// goes to it, from this page's own origin; each value is put in the page as text, never as HTML.
"use strict";

const platform = (() => {
  const API = "/platform/v1";
  const REFRESH_MS = 3000;
  const LIVE = ["starting", "running"];

  // --- small helpers ----------------------------------------------------------------------------------

  function el(tag, attrs = {}, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs)) {
      if (value !== null && value !== undefined && value !== false) node.setAttribute(key, value === true ? "" : value);
    }
    node.append(...children.filter((child) => child !== null && child !== undefined));
    return node;
  }

  const $ = (selector) => document.querySelector(selector);
  const path = (...parts) => parts.map(encodeURIComponent).join("/");

  // An error of the control API: its own message (the "error" of its JSON body), as it said it.
  class ApiError extends Error {
    constructor(status, message) {
      super(message);
      this.status = status;
    }
  }

  async function call(method, url, body, headers = {}) {
    const init = { method, headers: { accept: "application/json", ...headers }, credentials: "same-origin" };
    if (body !== undefined) {
      init.headers["content-type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    const response = await fetch(url, init);
    const text = await response.text();
    let parsed = null;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch (_) {
      // not JSON: the text itself is the message
    }
    if (!response.ok) {
      const message = parsed && typeof parsed.error === "string" ? parsed.error : text || response.statusText;
      throw new ApiError(response.status, message);
    }
    return parsed;
  }

  const get = (url) => call("GET", url);

  // Every time in UTC, whatever zone the API wrote it in or the browser is in.
  const time = (iso) => {
    if (!iso) return "–";
    const when = new Date(iso);
    return Number.isNaN(when.getTime()) ? iso : `${when.toISOString().slice(0, 19).replace("T", " ")} UTC`;
  };
  const shortDigest = (digest) => digest.replace(/^(sha256:)?([0-9a-f]{12})[0-9a-f]*$/, "$1$2");

  function size(bytes) {
    const units = ["B", "KiB", "MiB", "GiB"];
    let value = bytes;
    let unit = 0;
    while (value >= 1024 && unit < units.length - 1) {
      value /= 1024;
      unit += 1;
    }
    return `${unit ? value.toFixed(1) : value} ${units[unit]}`;
  }

  function badge(state) {
    const kind = { running: "ready", succeeded: "ready", starting: "pending", stopping: "pending", pending: "pending",
      stopped: "idle", cancelled: "idle" }[state];
    return el("span", { class: kind ? `badge ${kind}` : "badge", "data-state": state }, state);
  }

  function show(node, message) {
    node.textContent = message;
  }

  // Render `data` with `draw` only when it changed since the last time (a refresh keeps what is shown,
  // the focus and what is being typed, when nothing changed).
  const drawn = new Map();
  function whenChanged(key, data, draw) {
    const text = JSON.stringify(data);
    if (drawn.get(key) === text) return;
    drawn.set(key, text);
    draw(data);
  }

  // --- state ------------------------------------------------------------------------------------------

  let info = { gateway_port: null, login: false };
  let timer = null;

  const selected = () => decodeURIComponent(location.hash.replace(/^#/, ""));

  // --- the list of deployments and the form creating one ----------------------------------------------

  function drawDeployments(deployments) {
    const rows = deployments.map((d) =>
      el("tr", { "data-deployment": d.name, class: d.name === selected() ? "selected" : null },
        el("td", {}, el("a", { href: `#${encodeURIComponent(d.name)}` }, d.name)),
        el("td", { class: "description" }, d.description || ""),
        el("td", {}, time(d.created_at))));
    $("#deployments tbody").replaceChildren(...rows);
    $("#deployments").hidden = deployments.length === 0;
  }

  async function createDeployment(event) {
    event.preventDefault();
    const error = $("#create-error");
    show(error, "");
    const name = $("#new-name").value.trim();
    const description = $("#new-description").value;
    try {
      await call("POST", `${API}/deployments`, { name, description });
    } catch (failure) {
      return show(error, failure.message);
    }
    $("#new-name").value = "";
    $("#new-description").value = "";
    location.hash = encodeURIComponent(name);
    await refresh();
  }

  // --- one deployment ---------------------------------------------------------------------------------

  // Run `action` (a change through the API), showing its error as the API said it; then refresh.
  async function act(button, action) {
    const error = $("#action-error");
    show(error, "");
    button.disabled = true;
    try {
      await action();
    } catch (failure) {
      show(error, failure.message);
      button.disabled = false;
      return;
    }
    await refresh();
  }

  function drawVersions({ deployment, versions }) {
    const rows = versions.map((v) => {
      const start = el("button", { type: "button", class: "small secondary start-service" }, "start a service");
      start.addEventListener("click", () =>
        act(start, () => call("POST", `${API}/deployments/${path(deployment)}/services`, { version: v.id })));
      return el("tr", { "data-version": v.id },
        el("td", {}, v.label),
        el("td", { class: "id" }, v.id),
        el("td", { class: "id", title: v.digest }, shortDigest(v.digest)),
        el("td", { class: "number" }, size(v.size)),
        el("td", {}, time(v.created_at)),
        el("td", {}, start));
    });
    $("#versions tbody").replaceChildren(...(rows.length ? rows : [empty(6, "No versions: push one with inferd platform push.")]));
  }

  function empty(columns, text) {
    return el("tr", {}, el("td", { colspan: columns, class: "hint" }, text));
  }

  // The endpoints that send service `id` requests (a weight above 0, or as its shadow): the API refuses
  // to stop it until they route elsewhere, so its stop button says so instead.
  const routedBy = (id, endpoints) =>
    endpoints.filter((e) => e.routes.some((r) => r.service_id === id && r.weight > 0) || e.shadow_service_id === id)
      .map((e) => e.name);

  function drawServices({ services, versions, traffic, endpoints }) {
    const labels = Object.fromEntries(versions.map((v) => [v.id, v.label]));
    const rows = services.map((s) => {
      const counted = traffic[s.id] || { requests: null, latency_ms: null, gateway: 0 };
      const live = LIVE.includes(s.state);
      const routing = live ? routedBy(s.id, endpoints) : [];
      const why = routing.length
        ? `endpoint ${routing.join(", ")} route${routing.length === 1 ? "s" : ""} requests to it: route elsewhere first`
        : null;
      const button = el("button", { type: "button", class: `small ${live ? "stop" : "start"}`,
        disabled: s.state === "stopping" || routing.length > 0, title: why }, live ? "stop" : "start");
      const log = el("button", { type: "button", class: "small secondary log" }, "log");
      log.addEventListener("click", () => consoleServices.openLog(s.id));
      button.addEventListener("click", () =>
        act(button, () => call("POST", `${API}/services/${path(s.id)}/${live ? "stop" : "start"}`)));
      const requests = counted.requests
        ? `${counted.requests.ok} ok` + (counted.requests.error ? `, ${counted.requests.error} failed` : "")
        : "–";
      return el("tr", { "data-service": s.id },
        el("td", { class: "id" }, s.id),
        el("td", {}, labels[s.version_id] || s.version_id),
        el("td", { class: "state" }, badge(s.state), s.reason ? el("small", { class: "hint reason" }, ` ${s.reason}`) : null),
        el("td", { class: "number replicas", title: `ready/wanted, scaled ${s.min_replicas}–${s.max_replicas}` },
          `${s.ready_replicas}/${s.replicas}`),
        el("td", { class: "number" }, s.port === null ? "–" : String(s.port)),
        el("td", { class: "number" }, String(s.restarts)),
        el("td", { class: "number requests" }, requests),
        el("td", { class: "number" }, counted.latency_ms === null ? "–" : `${counted.latency_ms} ms`),
        el("td", { class: "number" }, String(counted.gateway)),
        el("td", { class: "actions" }, button, " ", log, why ? el("small", { class: "hint stop-reason" }, why) : null));
    });
    $("#services tbody").replaceChildren(...(rows.length ? rows : [empty(10, "No services: start one from a version.")]));
  }

  // One endpoint's weights as a form (or, without an endpoint, the form making a new one): an input per
  // route, and per other service of the deployment; the API decides whether they sum to 100.
  function endpointForm(deployment, endpoint, services) {
    const routed = new Map((endpoint ? endpoint.routes : []).map((r) => [r.service_id, r.weight]));
    const ids = [...routed.keys(), ...services.map((s) => s.id).filter((id) => !routed.has(id))];
    const states = Object.fromEntries(services.map((s) => [s.id, s.state]));
    const form = el("form", { class: "endpoint", "data-endpoint": endpoint ? endpoint.name : "" });
    const sum = el("span", { class: "sum" });
    const inputs = ids.map((id) => {
      const input = el("input", { type: "number", min: 0, max: 100, step: 1, "data-service": id,
        "aria-label": `weight of ${id}` });
      input.value = String(routed.get(id) ?? 0);
      return input;
    });
    const total = () => inputs.reduce((all, input) => all + (Number(input.value) || 0), 0);
    const recount = () => show(sum, `sum: ${total()}`);
    form.addEventListener("input", () => {
      form.dataset.dirty = "1";
      recount();
    });
    recount();
    const error = el("p", { class: "error", role: "alert" });
    let title;
    let name = null;
    if (endpoint) {
      const url = info.gateway_port
        ? `${location.protocol}//${location.hostname}:${info.gateway_port}/e/${encodeURIComponent(endpoint.name)}/`
        : `/e/${encodeURIComponent(endpoint.name)}/`;
      const shadow = endpoint.shadow_service_id
        ? el("small", { class: "hint" }, ` · shadow ${endpoint.shadow_service_id} (${endpoint.shadow_percent}%)`)
        : null;
      const tryIt = el("a", { class: "try-it", href: `${url}inferd/`, target: "_blank", rel: "noopener" },
        "try it through this endpoint");
      title = el("h3", {}, endpoint.name, " ", el("small", {}, el("code", { class: "gateway-url" }, url)), shadow, tryIt);
    } else {
      name = el("input", { type: "text", class: "endpoint-name", placeholder: "main", required: true, "aria-label": "endpoint name" });
      title = el("h3", {}, "New endpoint ", name);
    }
    const rows = ids.map((id, i) =>
      el("tr", { "data-route": id },
        el("td", { class: "id" }, id, routed.has(id) ? null : el("small", { class: "hint" }, " (not routed)")),
        el("td", {}, states[id] ? badge(states[id]) : el("span", { class: "badge" }, "deleted")),
        el("td", { class: "number" }, inputs[i])));
    const table = el("table", {},
      el("thead", {}, el("tr", {}, el("th", {}, "Service"), el("th", {}, "State"), el("th", { class: "number" }, "Weight (%)"))),
      el("tbody", {}, ...rows));
    const save = el("button", { type: "submit", class: "save" }, endpoint ? "Save weights" : "Create endpoint");
    form.append(title, table, el("div", { class: "inline" }, save, sum), error);
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      show(error, "");
      const routes = ids
        .map((id, i) => ({ service: id, weight: Number(inputs[i].value) || 0 }))
        .filter((route) => route.weight > 0 || routed.has(route.service));
      const body = { routes };
      if (endpoint && endpoint.shadow_service_id) {
        body.shadow = { service: endpoint.shadow_service_id, percent: endpoint.shadow_percent };
      }
      const target = endpoint ? endpoint.name : name.value.trim();
      // only if nobody switched it (or created it) since this form was drawn
      const condition = endpoint ? { "if-match": endpoint.etag } : { "if-none-match": "*" };
      save.disabled = true;
      try {
        await call("PUT", `${API}/deployments/${path(deployment)}/endpoints/${path(target)}`, body, condition);
      } catch (failure) {
        save.disabled = false;
        if (failure instanceof ApiError && failure.status === 412) {
          // drawn again from what the API now says, the API's words shown in the new form
          delete form.dataset.dirty;
          drawn.delete("endpoints");
          await refresh();
          const fresh = [...document.querySelectorAll("form.endpoint")].find((f) => f.dataset.endpoint === target);
          if (fresh) show(fresh.querySelector(".error"), failure.message);
          return;
        }
        show(error, failure.message);
        return;
      }
      delete form.dataset.dirty;
      drawn.delete("endpoints"); // drawn again from what the API now says
      await refresh();
    });
    return form;
  }

  function drawEndpoints({ deployment, endpoints, services }) {
    const holder = $("#endpoints");
    const kept = new Map([...holder.querySelectorAll("form.endpoint")].map((form) => [form.dataset.endpoint, form]));
    const forms = [...endpoints, null].map((endpoint) => {
      const old = kept.get(endpoint ? endpoint.name : "");
      // what someone is typing stays until saved
      return old && old.dataset.dirty ? old : endpointForm(deployment, endpoint, services);
    });
    holder.replaceChildren(...forms);
  }

  function drawRuns(runs) {
    const section = $("#runs-section");
    if (runs === null) {
      section.hidden = true;
      return;
    }
    const listed = Array.isArray(runs) ? runs : Array.isArray(runs.runs) ? runs.runs : [];
    const rows = listed.map((r) =>
      el("tr", { "data-run": r.id },
        el("td", { class: "id" }, r.id),
        el("td", { class: "id" }, r.version_id || "–"),
        el("td", {}, badge(String(r.state)), r.reason ? el("small", { class: "hint" }, ` ${r.reason}`) : null),
        el("td", {}, (r.inputs || []).join(", ")),
        el("td", {}, r.output || "–"),
        el("td", {}, time(r.created_at)),
        el("td", {}, time(r.finished_at))));
    $("#runs tbody").replaceChildren(...(rows.length ? rows : [empty(7, "No runs.")]));
    section.hidden = false;
  }

  // The deployment's runs, or null where this control process has no runs API.
  async function runsOf(deployment) {
    try {
      return await get(`${API}/deployments/${path(deployment)}/runs`);
    } catch (failure) {
      if (failure instanceof ApiError && (failure.status === 404 || failure.status === 405)) return null;
      throw failure;
    }
  }

  async function drawDeployment(name) {
    const base = `${API}/deployments/${path(name)}`;
    const [deployment, versions, services, endpoints, traffic, runs] = await Promise.all([
      get(base),
      get(`${base}/versions`),
      get(`${base}/services`),
      get(`${base}/endpoints`),
      get(`/console/api/deployments/${path(name)}/traffic`).catch(() => ({})),
      runsOf(name),
    ]);
    const history = await get(`/console/api/deployments/${path(name)}/history`).catch(() => null);
    whenChanged("deployment", deployment, (d) => {
      show($("#deployment-name"), d.name);
      show($("#deployment-description"), d.description || "");
      show($("#action-error"), "");
    });
    whenChanged("versions", { deployment: name, versions }, drawVersions);
    whenChanged("services", { services, versions, traffic, endpoints }, drawServices);
    whenChanged("history", { history, services: services.map((s) => s.id), endpoints: endpoints.map((e) => e.name) },
      () => consoleServices.drawHistory(history, services, endpoints));
    whenChanged("endpoints", { deployment: name, endpoints, services: services.map(({ id, state }) => ({ id, state })) },
      drawEndpoints);
    whenChanged("runs", runs, drawRuns);
    $("#deployment").hidden = false;
  }

  // --- refresh ----------------------------------------------------------------------------------------

  async function refresh() {
    clearTimeout(timer);
    const status = $("#status");
    try {
      const deployments = await get(`${API}/deployments`);
      whenChanged("deployments", { deployments, selected: selected() }, ({ deployments: listed }) => drawDeployments(listed));
      const name = selected();
      if (name && deployments.some((d) => d.name === name)) {
        await drawDeployment(name);
      } else {
        $("#deployment").hidden = true;
      }
      // ABEJA training's definitions, jobs with their curves, and training models (training.js)
      await training.refresh();
      const count = deployments.length;
      status.className = "hint";
      show(status, `${count} deployment${count === 1 ? "" : "s"}. Updated ${new Date().toISOString().slice(11, 19)} UTC; every ${REFRESH_MS / 1000} s.`);
    } catch (failure) {
      status.className = "error";
      if (failure instanceof ApiError && failure.status === 401) {
        status.replaceChildren("Signed out: ", el("a", { href: "/console/login?next=/console/" }, "sign in"), ".");
      } else {
        show(status, `Cannot read the control API: ${failure.message}`);
      }
    } finally {
      timer = setTimeout(refresh, REFRESH_MS);
    }
  }

  async function start() {
    $("#create-deployment").addEventListener("submit", createDeployment);
    window.addEventListener("hashchange", () => {
      for (const key of ["deployment", "versions", "services", "endpoints", "runs", "history"]) drawn.delete(key);
      consoleServices.closeLog();
      $("#endpoints").replaceChildren();
      refresh();
    });
    try {
      info = await get("/console/api/info");
    } catch (_) {
      // the page works without it: endpoints show their path on the gateway only
    }
    $("#sign-out").hidden = !info.login;
    if (info.version) show($("#server"), `platform console · inferd ${info.version}`);
    await refresh();
  }

  return { start, refresh };
})();

platform.start();
