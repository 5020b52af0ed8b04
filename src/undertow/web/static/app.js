// The undertow dashboard: plain JavaScript over the job's Flink-shaped REST JSON (same origin).
// Routes: #/ (jobs), #/job/<id>/overview (graph), #/job/<id>/checkpoints, #/job/<id>/exceptions.
// Every view re-renders from fresh JSON on each refresh tick (Flink's /config refresh-interval).
"use strict";

const LONG_MIN = -9223372036854775808;
let refreshMs = 3000;
let refreshing = false;
let selectedCheckpoint = null;
let message = "";

function esc(value) {
  return String(value).replace(/[&<>"']/g, (c) => ({
    "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;",
  })[c]);
}

async function getJson(path) {
  const response = await fetch(path, { cache: "no-store" });
  if (!response.ok) {
    const error = new Error(`${path}: HTTP ${response.status}`);
    error.status = response.status;
    throw error;
  }
  return response.json();
}

function time(ms) {
  return ms === undefined || ms === null || ms < 0 ? "-" : new Date(ms).toLocaleTimeString();
}
function duration(ms) {
  if (ms === undefined || ms === null || ms < 0) return "-";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60000)} m ${Math.round((ms % 60000) / 1000)} s`;
}
function bytes(n) {
  if (n === undefined || n === null || n < 0) return "-";
  const units = ["B", "KB", "MB", "GB", "TB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i += 1; }
  return `${i ? n.toFixed(1) : n} ${units[i]}`;
}
function watermark(value) {
  const n = Number(value);
  return !Number.isFinite(n) || n <= LONG_MIN ? "No Watermark" : new Date(n).toISOString();
}
function table(headers, rows, attrs = "") {
  const head = headers.map((h) => `<th>${esc(h)}</th>`).join("");
  return `<table ${attrs}><thead><tr>${head}</tr></thead><tbody>${rows.join("")}</tbody></table>`;
}
function cells(values) {
  return values.map((v) => `<td${typeof v === "number" ? ' class="num"' : ""}>${esc(v)}</td>`)
    .join("");
}

// -- job list ---------------------------------------------------------------------------------
async function renderJobs(app) {
  const overview = await getJson("/jobs/overview");
  const rows = overview.jobs.map((job) => `<tr id="job-${esc(job.jid)}">
      <td><a href="#/job/${esc(job.jid)}/overview">${esc(job.name)}</a></td>
      <td class="state-${esc(job.state)}">${esc(job.state)}</td>
      <td>${esc(time(job["start-time"]))}</td><td class="num">${esc(duration(job.duration))}</td>
      <td class="num">${esc(job.tasks.total)}</td><td>${esc(job.jid)}</td></tr>`);
  app.innerHTML = "<h2>Jobs</h2>" +
    table(["Name", "Status", "Start", "Duration", "Tasks", "Job ID"], rows, 'id="jobs"');
}

// -- one job ----------------------------------------------------------------------------------
function jobHeader(job, tab) {
  const tabs = ["overview", "checkpoints", "exceptions"].map((t) =>
    `<a href="#/job/${esc(job.jid)}/${t}" class="${t === tab ? "active" : ""}" id="tab-${t}">` +
    `${t === "overview" ? "Overview" : t === "checkpoints" ? "Checkpoints" : "Exceptions"}</a>`);
  const running = job.state === "RUNNING";
  return `<h2>${esc(job.name)} <span id="job-state" class="state-${esc(job.state)}">` +
    `${esc(job.state)}</span></h2>
    <p>Job ID ${esc(job.jid)} &middot; started ${esc(time(job["start-time"]))} &middot;
      duration ${esc(duration(job.duration))}</p>
    <p><button id="savepoint" ${running ? "" : "disabled"}>Trigger savepoint</button>
       <button id="stop" ${running ? "" : "disabled"}>Stop with savepoint</button></p>
    <div id="message">${esc(message)}</div>
    <nav class="tabs">${tabs.join("")}</nav>`;
}

function bindButtons(job) {
  const savepoint = document.getElementById("savepoint");
  const stop = document.getElementById("stop");
  if (savepoint) savepoint.onclick = () => operation(job.jid, false);
  if (stop) stop.onclick = () => operation(job.jid, true);
}

async function operation(jid, stopJob) {
  const what = stopJob ? "stop with savepoint" : "savepoint";
  const target = window.prompt(`Target directory of the ${what} (empty: the job's ` +
    "execution.checkpointing.savepoint-dir)", "");
  if (target === null) return;
  const body = stopJob ? { drain: false } : { "cancel-job": false };
  if (target) body[stopJob ? "targetDirectory" : "target-directory"] = target;
  const path = `/jobs/${jid}/${stopJob ? "stop" : "savepoints"}`;
  const response = await changeJob(path, JSON.stringify(body));
  if (response === null) return;
  const answer = await response.json().catch(() => ({}));
  if (!response.ok) {
    setMessage(`${what} refused: ${(answer.errors || [response.status]).join("; ")}`);
    return;
  }
  setMessage(`${what} ${answer["request-id"]}: IN_PROGRESS`);
  const trigger = answer["request-id"];
  for (let i = 0; i < 600; i += 1) {
    await new Promise((resolve) => setTimeout(resolve, 500));
    let result;
    try {
      result = await getJson(`/jobs/${jid}/savepoints/${trigger}`);
    } catch (err) {
      setMessage(`${what} ${trigger}: the job ended (${err.message})`);
      return;
    }
    if (result.status.id === "COMPLETED") {
      const op = result.operation || {};
      setMessage(op.location ? `${what} completed: ${op.location}` :
        `${what} failed: ${JSON.stringify(op["failure-cause"] || op)}`);
      return;
    }
  }
}

// A request that changes the job. Off loopback the REST API asks for the job's token (401):
// ask the user once, keep it for this tab only (sessionStorage), and send it as a Bearer
// token; a refused token (403) is forgotten. Null when the user declined to give one.
async function changeJob(path, body) {
  for (;;) {
    const headers = { "Content-Type": "application/json" };
    const token = sessionStorage.getItem("undertow-rest-token");
    if (token) headers.Authorization = `Bearer ${token}`;
    const response = await fetch(path, { method: "POST", headers, body });
    if (response.status === 403 && token) sessionStorage.removeItem("undertow-rest-token");
    if (response.status !== 401 && !(response.status === 403 && token)) return response;
    const given = window.prompt(
      (token ? "That token was refused. " : "") +
      "This job's REST API needs its token to change the job (printed where the job started, " +
      "or rest.token):", "");
    if (!given) return null;
    sessionStorage.setItem("undertow-rest-token", given.trim());
  }
}

function setMessage(text) {
  message = text;
  const element = document.getElementById("message");
  if (element) element.textContent = text;
}

// -- overview: the job graph ------------------------------------------------------------------
function vertexColour(busy, backpressured) {
  // Flink's web UI: idle blue, busy red, backpressured black
  if (backpressured > 0.5) return "#333";
  const b = Math.min(1, Math.max(0, busy));
  return `rgb(${Math.round(80 + 160 * b)},${Math.round(140 - 90 * b)},${Math.round(220 - 180 * b)})`;
}

async function renderOverview(app, job) {
  const jid = job.jid;
  const plan = (await getJson(`/jobs/${jid}/plan`)).plan;
  const info = {};
  await Promise.all(job.vertices.map(async (v) => {
    const [pressure, marks] = await Promise.all([
      getJson(`/jobs/${jid}/vertices/${v.id}/backpressure`),
      getJson(`/jobs/${jid}/vertices/${v.id}/watermarks`),
    ]);
    const subtasks = pressure.subtasks || [];
    const max = (key) => subtasks.reduce((m, s) => Math.max(m, s[key]), 0);
    const low = marks.length ? Math.min(...marks.map((m) => Number(m.value))) : LONG_MIN;
    info[v.id] = { busy: max("busyRatio"), backpressured: max("ratio"), idle: max("idleRatio"),
      watermark: low, level: pressure["backpressure-level"] || "-" };
  }));
  // layered layout: a vertex's column is one more than its deepest input's
  const level = {};
  const depth = (node) => {
    if (level[node.id] !== undefined) return level[node.id];
    level[node.id] = 0;
    const inputs = (node.inputs || []).map((i) => plan.nodes.find((n) => n.id === i.id));
    level[node.id] = inputs.length ? 1 + Math.max(...inputs.map(depth)) : 0;
    return level[node.id];
  };
  plan.nodes.forEach(depth);
  const rowsAt = {};
  const pos = {};
  plan.nodes.forEach((n) => {
    const row = rowsAt[level[n.id]] || 0;
    rowsAt[level[n.id]] = row + 1;
    pos[n.id] = { x: 20 + level[n.id] * 340, y: 20 + row * 110 };
  });
  const width = 40 + (Math.max(...Object.values(level)) + 1) * 340;
  const height = 40 + Math.max(...Object.values(rowsAt)) * 110;
  let svg = `<svg id="graph" width="${width}" height="${height}">`;
  plan.nodes.forEach((n) => (n.inputs || []).forEach((input) => {
    const a = pos[input.id];
    const b = pos[n.id];
    svg += `<line x1="${a.x + 270}" y1="${a.y + 35}" x2="${b.x}" y2="${b.y + 35}"
      stroke="#789" stroke-width="2"/>
      <text class="edge" x="${(a.x + 270 + b.x) / 2 - 25}" y="${(a.y + b.y) / 2 + 30}"
      fill="#456">${esc(input.ship_strategy)}</text>`;
  }));
  const byId = Object.fromEntries(job.vertices.map((v) => [v.id, v]));
  plan.nodes.forEach((n) => {
    const p = pos[n.id];
    const v = byId[n.id];
    const i = info[n.id];
    svg += `<g class="vertex" id="vertex-${esc(n.id)}" data-busy="${i.busy}"
        data-backpressured="${i.backpressured}"><title>${esc(n.description)}</title>
      <rect x="${p.x}" y="${p.y}" width="270" height="70" rx="6"
        fill="${vertexColour(i.busy, i.backpressured)}"/>
      <text x="${p.x + 8}" y="${p.y + 18}" fill="#fff">${esc(v.name.length > 40 ? `${v.name.slice(0, 39)}…` : v.name)}</text>
      <text x="${p.x + 8}" y="${p.y + 36}" fill="#fff">Parallelism ${esc(v.parallelism)}
        &middot; ${esc(v.status)}</text>
      <text x="${p.x + 8}" y="${p.y + 54}" fill="#fff">Busy ${Math.round(i.busy * 100)}%
        &middot; Backpressured ${Math.round(i.backpressured * 100)}%</text></g>`;
  });
  svg += "</svg>";
  const rows = job.vertices.map((v) => {
    const i = info[v.id];
    return `<tr id="vertex-row-${esc(v.id)}">${cells([v.name, v.status, v.parallelism,
      v.metrics["read-records"], v.metrics["write-records"], bytes(v.metrics["write-bytes"]),
      `${Math.round(i.busy * 100)}%`, `${Math.round(i.backpressured * 100)}%`,
      `${Math.round(i.idle * 100)}%`, i.level, watermark(i.watermark)])}</tr>`;
  });
  app.innerHTML += `<div class="panel">
    <p class="legend"><span style="background:${vertexColour(0, 0)}">idle</span>
      <span style="background:${vertexColour(1, 0)}">busy</span>
      <span style="background:#333">backpressured</span></p>${svg}
    <h3>Vertices</h3>${table(["Name", "Status", "Parallelism", "Records in", "Records out",
      "Bytes out", "Busy (max)", "Backpressured (max)", "Idle (max)", "Backpressure",
      "Low watermark"], rows, 'id="vertices"')}</div>`;
}

// -- checkpoints ------------------------------------------------------------------------------
function checkpointRow(c) {
  const selected = c.id === selectedCheckpoint ? ' class="selected"' : "";
  return `<tr id="checkpoint-${c.id}" data-id="${c.id}"${selected}>${cells([c.id,
    c.is_savepoint ? "Savepoint" : "Checkpoint", c.status, time(c.trigger_timestamp),
    duration(c.end_to_end_duration), bytes(c.checkpointed_size), bytes(c.processed_data),
    bytes(c.persisted_data), c.checkpoint_type === "UNALIGNED_CHECKPOINT" ? "unaligned" :
      "aligned", `${c.num_acknowledged_subtasks}/${c.num_subtasks}`])}</tr>`;
}

function latestLine(label, c, extra) {
  if (!c) return `<tr><th>${esc(label)}</th><td colspan="4">None</td></tr>`;
  return `<tr><th>${esc(label)}</th>${cells([`ID ${c.id}`, time(extra.time),
    duration(c.end_to_end_duration), extra.text || ""])}</tr>`;
}

async function renderCheckpoints(app, job) {
  const jid = job.jid;
  const [stats, config] = await Promise.all([
    getJson(`/jobs/${jid}/checkpoints`), getJson(`/jobs/${jid}/checkpoints/config`),
  ]);
  const counts = stats.counts;
  const latest = stats.latest;
  const restored = latest.restored;
  let html = `<div class="panel" id="checkpoints"><h3>Overview</h3>
    ${table(["Triggered", "In progress", "Completed", "Failed", "Restored"],
      [`<tr id="checkpoint-counts">${cells([counts.total, counts.in_progress, counts.completed,
        counts.failed, counts.restored])}</tr>`])}
    <h3>Latest</h3><table id="checkpoint-latest">
    ${latestLine("Completed", latest.completed, { time: latest.completed &&
      latest.completed.latest_ack_timestamp, text: latest.completed &&
      latest.completed.external_path })}
    ${latestLine("Failed", latest.failed, { time: latest.failed &&
      latest.failed.failure_timestamp, text: latest.failed && latest.failed.failure_message })}
    ${latestLine("Savepoint", latest.savepoint, { time: latest.savepoint &&
      latest.savepoint.latest_ack_timestamp, text: latest.savepoint &&
      latest.savepoint.external_path })}
    <tr><th>Restore</th><td colspan="4">${restored ? esc(`ID ${restored.id} at ` +
      `${time(restored.restore_timestamp)} from ${restored.external_path}` +
      (restored.is_savepoint ? " (savepoint)" : "")) : "None"}</td></tr></table>
    <h3>History</h3>
    ${table(["ID", "Type", "Status", "Triggered", "End to end", "Checkpointed size",
      "Processed in-flight", "Persisted in-flight", "Alignment", "Acknowledged"],
      stats.history.map(checkpointRow), 'id="checkpoint-history"')}
    <h3>Summary (completed checkpoints)</h3>`;
  const s = stats.summary;
  const summaryRow = (name, dto, format) => `<tr>${cells([name,
    ...["min", "avg", "p50", "p99", "max"].map((k) => format(dto[k]))])}</tr>`;
  html += table(["", "Minimum", "Average", "p50", "p99", "Maximum"], [
    summaryRow("End to end duration", s.end_to_end_duration, duration),
    summaryRow("Checkpointed data size", s.checkpointed_size, bytes),
    summaryRow("Full checkpoint data size", s.state_size, bytes),
    summaryRow("Processed in-flight data", s.processed_data, bytes),
    summaryRow("Persisted in-flight data", s.persisted_data, bytes),
  ], 'id="checkpoint-summary"');
  html += '<h3>Details</h3><div id="checkpoint-details">Click a checkpoint of the history.</div>';
  html += "<h3>Configuration</h3>" + table(["Option", "Value"], [
    ["Checkpointing mode", config.mode.toUpperCase()],
    ["Interval", config.interval >= 9.2e18 ? "Periodic checkpoints disabled" :
      duration(config.interval)],
    ["Timeout", duration(config.timeout)], ["Minimum pause", duration(config.min_pause)],
    ["Maximum concurrent", config.max_concurrent],
    ["Unaligned checkpoints", config.unaligned_checkpoints ? "Enabled" : "Disabled"],
    ["Aligned checkpoint timeout", duration(config.aligned_checkpoint_timeout)],
    ["Tolerable failed checkpoints", config.tolerable_failed_checkpoints],
    ["Persist checkpoints externally", !config.externalization.enabled ? "Disabled" :
      config.externalization.delete_on_cancellation ? "Enabled (delete on cancellation)" :
        "Enabled (retain on cancellation)"],
    ["State backend", config.state_backend], ["Checkpoint storage", config.checkpoint_storage],
  ].map((r) => `<tr>${cells(r)}</tr>`), 'id="checkpoint-config"') + "</div>";
  app.innerHTML += html;
  if (selectedCheckpoint !== null) await renderCheckpointDetails(app, job, selectedCheckpoint);
}

async function renderCheckpointDetails(root, job, id) {
  const target = root.querySelector("#checkpoint-details");
  let details;
  try {
    details = await getJson(`/jobs/${job.jid}/checkpoints/details/${id}`);
  } catch (err) {
    target.textContent = `Checkpoint ${id} is no longer in the history (${err.message}).`;
    return;
  }
  const names = Object.fromEntries(job.vertices.map((v) => [v.id, v.name]));
  let html = `<p>Checkpoint ${id}: ${esc(details.status)}</p>`;
  for (const [vid, task] of Object.entries(details.tasks)) {
    const rows = (task.subtasks || []).map((st) => st.status !== "completed" ?
      `<tr>${cells([st.index, st.status, "-", "-", "-", "-", "-", "-", "-"])}</tr>` :
      `<tr>${cells([st.index, st.status, duration(st.end_to_end_duration),
        bytes(st.checkpointed_size), duration(st.start_delay), duration(st.alignment.duration),
        duration(st.checkpoint.sync), duration(st.checkpoint.async),
        `${bytes(st.alignment.processed)} / ${bytes(st.alignment.persisted)}`])}</tr>`);
    html += `<h4>${esc(names[vid] || vid)} (${task.num_acknowledged_subtasks}/` +
      `${task.num_subtasks})</h4>` + table(["Subtask", "Status", "End to end",
      "Checkpointed size", "Start delay", "Alignment", "Sync", "Async",
      "In-flight processed / persisted"], rows, `class="subtask-details" data-vertex="${esc(vid)}"`);
  }
  target.innerHTML = html;
}

// -- exceptions -------------------------------------------------------------------------------
async function renderExceptions(app, job) {
  let body;
  try {
    body = await getJson(`/jobs/${job.jid}/exceptions`);
  } catch (err) {
    if (err.status !== 404) throw err;
    body = null;
  }
  const entries = body && body.exceptionHistory ? body.exceptionHistory.entries : [];
  if (!entries.length && !(body && body["root-exception"])) {
    app.innerHTML += '<div class="panel" id="exceptions"><p>No exceptions.</p></div>';
    return;
  }
  let html = '<div class="panel" id="exceptions">';
  // Flink 1.x serves the newest failure as root-exception too; 2.x only the history
  const root = body["root-exception"] || (entries.length ? entries[0].stacktrace : "");
  const rootTime = body["root-exception"] ? body.timestamp : entries.length && entries[0].timestamp;
  if (root) {
    html += `<h3>Root cause (${esc(time(rootTime))})</h3>` +
      `<pre id="root-exception">${esc(root)}</pre>`;
  }
  html += "<h3>History</h3>";
  entries.forEach((e, index) => {
    html += `<div class="exception" id="exception-${index}"><b>${esc(time(e.timestamp))}</b>
      ${esc(e.exceptionName)}
      ${e.taskName ? `in ${esc(e.taskName)}` : ""} ${e.endpoint ? `at ${esc(e.endpoint)}` : ""}
      <pre>${esc(e.stacktrace || "")}</pre>`;
    (e.concurrentExceptions || []).forEach((c) => {
      html += `<p>concurrently: ${esc(c.exceptionName)} ${esc(c.taskName || "")}</p>`;
    });
    html += "</div>";
  });
  if (body.exceptionHistory.truncated) html += "<p>(older failures left out)</p>";
  app.innerHTML += html + "</div>";
}

// -- routing and refresh ----------------------------------------------------------------------
async function refresh() {
  refreshing = true;
  try {
    await render();
  } finally {
    refreshing = false;
  }
}

async function render() {
  const app = document.getElementById("app");
  const route = (window.location.hash || "#/").slice(1).split("/").filter(Boolean);
  try {
    if (route[0] !== "job") {
      await renderJobs(app);
    } else {
      const job = await getJson(`/jobs/${route[1]}`);
      const tab = route[2] || "overview";
      const fresh = document.createElement("div");
      fresh.innerHTML = jobHeader(job, tab);
      if (tab === "checkpoints") await renderCheckpoints(fresh, job);
      else if (tab === "exceptions") await renderExceptions(fresh, job);
      else await renderOverview(fresh, job);
      app.replaceChildren(...fresh.childNodes);
      bindButtons(job);
      if (tab === "checkpoints") {
        document.querySelectorAll("#checkpoint-history tbody tr").forEach((tr) => {
          tr.onclick = () => { selectedCheckpoint = Number(tr.dataset.id); refresh(); };
        });
      }
    }
    document.getElementById("refreshed").textContent = `refreshed ${time(Date.now())}`;
  } catch (err) {
    document.getElementById("refreshed").textContent = `not refreshed: ${err.message}`;
  }
}

async function start() {
  try {
    const config = await getJson("/config");
    refreshMs = config["refresh-interval"] || refreshMs;
    document.getElementById("version").textContent = `version ${config["flink-version"]}`;
  } catch (err) { /* keep the default interval */ }
  window.addEventListener("hashchange", () => { selectedCheckpoint = null; refresh(); });
  await refresh();
  setInterval(() => { if (!refreshing) refresh(); }, refreshMs);
}

start();
