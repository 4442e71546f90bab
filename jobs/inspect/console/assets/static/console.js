// jobkit console: live queue statistics, the dead-job actions, a job's cancel and retry, and the
// schedules' pause, resume and fire. Job data is only ever written
// with textContent, never as HTML. State-changing requests carry the per-process token from the
// page's meta tag; in read-only mode the page has no token and no action.
"use strict";

(function () {
  const meta = (name) => {
    const m = document.querySelector('meta[name="' + name + '"]');
    return m ? m.content : "";
  };
  const token = meta("jobkit-token");
  const refresh = Math.max(1000, parseInt(meta("jobkit-refresh"), 10) || 3000);
  const $ = (id) => document.getElementById(id);

  function setText(el, value) {
    if (el) el.textContent = value;
  }

  async function getJSON(url) {
    const r = await fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" });
    const body = await r.json();
    if (!r.ok) throw new Error(body.error || r.statusText);
    return body;
  }

  async function post(url, data) {
    const r = await fetch(url, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-Jobkit-Token": token },
      body: JSON.stringify(data),
    });
    const body = await r.json();
    if (!r.ok) throw new Error(body.error || r.statusText);
    return body;
  }

  // Queue statistics, every few seconds.
  async function refreshQueues() {
    try {
      const doc = await getJSON("/api/queues");
      for (const q of doc.queues) {
        const row = document.querySelector('#queues tr[data-queue="' + CSS.escape(q.name) + '"]');
        if (!row) continue;
        const cell = (f) => row.querySelector('[data-field="' + f + '"]');
        setText(cell("visible"), q.visible);
        setText(cell("in_flight"), q.in_flight);
        setText(cell("delayed"), q.delayed);
        setText(cell("oldest_age"), q.oldest_age || "—");
        const st = cell("state");
        setText(st, q.paused ? "paused" : "active");
        if (st) st.classList.toggle("state-paused", q.paused);
        const op = row.querySelector("button.queue-op");
        if (op && !op.disabled) {
          op.dataset.op = q.paused ? "resume" : "pause";
          setText(op, q.paused ? "Resume" : "Pause");
        }
        if (q.dlq) {
          const d = cell("dlq_total");
          setText(d, q.dlq.total);
          if (d) d.classList.toggle("alert", q.dlq.total > 0);
          setText(cell("dlq_oldest_age"), q.dlq.oldest_age || "—");
        }
      }
      setText($("updated"), "updated " + new Date().toLocaleTimeString());
      $("updated").classList.remove("stale");
    } catch (e) {
      setText($("updated"), "refresh failed: " + e.message);
      $("updated").classList.add("stale");
    }
  }
  setInterval(refreshQueues, refresh);

  // Jobs per minute over the last hour, a chart per queue and per kind, every minute.
  const SVG = "http://www.w3.org/2000/svg";
  const total = (v) => v.reduce((a, b) => a + b, 0);
  function chart(s) {
    const box = document.createElement("div");
    box.className = s.kind ? "chart kind" : "chart";
    box.dataset.queue = s.queue;
    if (s.kind) box.dataset.kind = s.kind;
    const w = 600, h = s.kind ? 40 : 70, n = s.minutes.length;
    const top = Math.max(1, ...s.succeeded, ...s.retried, ...s.dead);
    const label = document.createElement("div");
    label.className = "chart-label";
    const name = document.createElement("b");
    name.textContent = s.kind ? s.kind : s.queue;
    label.appendChild(name);
    const peak = document.createElement("span");
    peak.className = "chart-peak muted";
    peak.textContent = "peak " + top + "/min";
    label.appendChild(peak);
    box.appendChild(label);
    const sums = document.createElement("div");
    sums.className = "chart-sums";
    sums.textContent = total(s.succeeded) + " succeeded · " + total(s.retried) + " retried · " + total(s.dead) + " dead";
    box.appendChild(sums);
    const svg = document.createElementNS(SVG, "svg");
    svg.setAttribute("viewBox", "0 0 " + w + " " + h);
    svg.setAttribute("preserveAspectRatio", "none");
    svg.setAttribute("role", "img");
    svg.setAttribute("aria-label", name.textContent + ": " + sums.textContent + " in the last hour");
    for (const [field, cls] of [["succeeded", "succeeded"], ["retried", "retried"], ["dead", "dead"]]) {
      const line = document.createElementNS(SVG, "polyline");
      line.setAttribute("class", "line " + cls);
      line.setAttribute("points", s[field].map((v, i) => ((i * w) / Math.max(1, n - 1)).toFixed(1) + "," + (h - 2 - (v / top) * (h - 4)).toFixed(1)).join(" "));
      svg.appendChild(line);
    }
    box.appendChild(svg);
    return box;
  }
  // A group per queue: its chart across, its kinds' below it.
  function groups(series) {
    const out = [];
    for (const s of series) {
      if (!s.kind) {
        const g = document.createElement("div");
        g.className = "chart-group";
        g.appendChild(chart(s));
        const kinds = document.createElement("div");
        kinds.className = "chart-kinds";
        g.appendChild(kinds);
        out.push(g);
      } else if (out.length) {
        out[out.length - 1].lastChild.appendChild(chart(s));
      }
    }
    return out;
  }
  async function refreshCharts() {
    const charts = $("charts");
    if (!charts) return;
    try {
      const doc = await getJSON("/api/metrics");
      charts.replaceChildren(...groups(doc.series));
      if (doc.series.length === 0) {
        const p = document.createElement("p");
        p.className = "muted";
        p.textContent = doc.warnings && doc.warnings.length ? "no data" : "no queues";
        charts.appendChild(p);
      }
      const warn = $("charts-warning");
      warn.hidden = !(doc.warnings && doc.warnings.length);
      setText(warn, (doc.warnings || []).join("; "));
    } catch (e) {
      setText($("charts-warning"), "jobs per minute: " + e.message);
      $("charts-warning").hidden = false;
    }
  }
  refreshCharts();
  setInterval(refreshCharts, 60000);

  if (!token) return;

  // One job's actions (the status panel) and the schedules' (each row).
  function said(text) {
    const p = $("action-result");
    if (!p) return;
    p.hidden = false;
    setText(p, text);
  }
  const jobActions = $("job-actions");
  if (jobActions) {
    const id = jobActions.dataset.job;
    const act = async (op, done) => {
      jobActions.querySelectorAll("button").forEach((b) => (b.disabled = true));
      try {
        const r = await post("/api/jobs/" + op, { id: id });
        said(done + " (state: " + r.job.state + ")");
        setTimeout(() => location.reload(), 800);
      } catch (e) {
        said(op + " failed: " + e.message);
      }
    };
    if ($("job-cancel")) $("job-cancel").addEventListener("click", () => act("cancel", "cancelled: it will not run"));
    if ($("job-retry")) $("job-retry").addEventListener("click", () => act("retry", "retrying now"));
  }
  document.querySelectorAll("#queues button.queue-op").forEach((b) => {
    b.addEventListener("click", async () => {
      const row = b.closest("tr");
      const op = b.dataset.op;
      b.disabled = true;
      try {
        const r = await post("/api/queues/" + op, { queue: row.dataset.queue });
        setText(row.querySelector(".op-result"), r.changed ? op + "d" : "already " + op + "d");
      } catch (e) {
        setText(row.querySelector(".op-result"), op + " failed: " + e.message);
      }
      b.disabled = false;
      await refreshQueues();
    });
  });
  document.querySelectorAll("#schedules button.schedule-op").forEach((b) => {
    b.addEventListener("click", async () => {
      const row = b.closest("tr");
      const op = b.dataset.op;
      b.disabled = true;
      try {
        const r = await post("/api/schedules/" + op, { group: row.dataset.group, name: row.dataset.name });
        const what = op === "fire" ? "fired: job " + r.job_id + " sent" : r.changed ? op + "d" : "already " + op + "d";
        setText(row.querySelector(".row-actions"), what);
        setTimeout(() => location.reload(), 800);
      } catch (e) {
        setText(row.querySelector(".row-actions"), op + " failed: " + e.message);
      }
    });
  });

  const actions = $("dead-actions");
  if (!actions) return;
  const queue = actions.dataset.queue;
  const picks = () => Array.from(document.querySelectorAll("#dead-jobs input.pick"));
  const picked = () => picks().filter((p) => p.checked).map((p) => p.value);

  function syncButtons() {
    $("redrive-selected").disabled = picked().length === 0;
  }
  document.addEventListener("change", (e) => {
    if (e.target.id === "select-all") picks().forEach((p) => (p.checked = e.target.checked));
    if (e.target.id === "select-all" || e.target.classList.contains("pick")) syncButtons();
  });

  function showProgress(t, label) {
    $("progress").hidden = false;
    const bar = $("progress-bar");
    bar.max = Math.max(1, t.total);
    bar.value = Math.min(t.moved, bar.max);
    let s = label + ": moved " + t.moved + (t.total ? " of " + t.total : "");
    if (t.failed) s += ", failed " + t.failed;
    if (t.no_destination) s += ", no destination " + t.no_destination;
    if (t.done) s += t.error ? " — error: " + t.error : " — done";
    setText($("progress-text"), s);
  }

  async function redrive(data) {
    $("redrive-selected").disabled = $("redrive-all").disabled = true;
    try {
      let t = await post("/api/redrive", Object.assign({ queue: queue }, data));
      showProgress(t, "redrive");
      while (!t.done) {
        await new Promise((r) => setTimeout(r, 400));
        t = await getJSON("/api/tasks/" + encodeURIComponent(t.id));
        showProgress(t, "redrive");
      }
      await refreshQueues();
      setTimeout(() => location.reload(), 800);
    } catch (e) {
      $("progress").hidden = false;
      setText($("progress-text"), "redrive failed: " + e.message);
      syncButtons();
    }
  }

  $("redrive-selected").addEventListener("click", () => redrive({ ids: picked() }));
  $("redrive-all").addEventListener("click", () => redrive({ all: true }));

  const confirmInput = $("purge-confirm");
  const want = actions.querySelector("label code").textContent;
  confirmInput.addEventListener("input", () => {
    $("purge").disabled = confirmInput.value !== want;
  });
  $("purge").addEventListener("click", async () => {
    $("purge").disabled = true;
    try {
      const r = await post("/api/purge", { queue: queue, confirm: confirmInput.value });
      $("progress").hidden = false;
      setText($("progress-text"), "purged about " + r.purged + " messages (SQS takes up to 60 s to finish)");
      setTimeout(() => location.reload(), 1500);
    } catch (e) {
      $("progress").hidden = false;
      setText($("progress-text"), "purge failed: " + e.message);
    }
  });
})();
