/* ppverify report: tables, Gantt charts (canvas), verdicts and findings from the embedded JSON.
   No dependencies, no network. Read-only hook for tests: window.ppverifyReport. */
(function () {
  "use strict";
  const DATA = JSON.parse(document.getElementById("ppverify-data").textContent);
  const LEVEL_ORDER = Object.keys(DATA.levels);
  const KIND_COLOR = { F: "#4c8bf5", B: "#34a853", I: "#f29d38", W: "#a06cd5" };
  const TR_COLOR = { activation: "rgba(76,139,245,0.55)", gradient: "rgba(52,168,83,0.55)" };
  const COLLECTIVE_COLOR = "rgba(0,121,107,0.8)";  // all-reduces: their own colour, not an op kind's
  const trColor = (kind) => TR_COLOR[kind] || COLLECTIVE_COLOR;
  let HATCH = null;  // pipe 1's bars are hatched, as in the Gantt PNG
  function hatch(ctx) {
    if (HATCH) return HATCH;
    const c = document.createElement("canvas");
    c.width = c.height = 6;
    const g = c.getContext("2d");
    g.strokeStyle = "rgba(255,255,255,0.75)"; g.lineWidth = 1.4;
    g.beginPath(); g.moveTo(0, 6); g.lineTo(6, 0); g.moveTo(-3, 3); g.lineTo(3, -3); g.moveTo(3, 9); g.lineTo(9, 3); g.stroke();
    return (HATCH = ctx.createPattern(c, "repeat"));
  }
  const WAIT_TEXT = DATA.wait_codes;
  // what a valid verdict proves, in the words of the command's own legend: "completeness, ...,
  // exclusivity and deadlock freedom" (the property named "deadlock" is proven absent)
  const PROVED = (() => {
    const names = (DATA.verifier || []).map((x) => (x.name === "deadlock" ? "deadlock freedom" : x.name));
    return names.length > 1 ? names.slice(0, -1).join(", ") + " and " + names[names.length - 1] : names.join("");
  })();
  const $ = (id) => document.getElementById(id);
  // text from the data (schedule names, levels, units: a results file's or a file name's own)
  // goes into markup escaped: a name such as "<img onerror=...>" is shown, never run
  const esc = (x) => String(x).replace(/[&<>"']/g, (c) => "&#" + c.charCodeAt(0) + ";");
  const el = (tag, attrs, text) => {
    const e = document.createElement(tag);
    for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  };

  // ---------- number formatting ----------
  function fmtTime(x, unit) {
    if (x === null || x === undefined || Number.isNaN(x)) return "-";
    if (unit === "s") return (x === 0 ? "0" : String(+(x * 1e3).toPrecision(4))) + " ms";
    if (unit === "slots" && x === 1) return "1 slot";  // the program level's axis: "1 slot", not "1 slots"
    return (+x.toPrecision(6)).toString() + (unit === "units" ? "" : " " + unit);
  }
  function fmtMem(x, unit) {
    if (x === null || x === undefined || Number.isNaN(x)) return "-";
    // as the text tables print it: three significant digits, no trailing zeros (56, not 56.0)
    if (unit === "bytes" || unit === "B") return String(+(x / 2 ** 30).toPrecision(3)) + " GiB";
    return (+x.toPrecision(3)).toString();
  }
  const opKind = (label) => label.replace(/^[0-9]+/, "")[0];

  // ---------- comparison tables ----------
  const rows = DATA.rows;
  // what the optimum level writes first in its note when the solver ran other ops than the family
  // (compare.optimum.UNLIKE; the text table marks that gap with "+", compare/table.py)
  const UNLIKE = "unlike ops";
  const configs = [...new Set(rows.map((r) => r.config))];
  function cell(r) {
    if (r.makespan === null || r.makespan === undefined) return [esc(r.status), "na", r.note || r.status];
    let t = esc(fmtTime(r.makespan, r.time_unit).replace(/ (ms|units)$/, ""));
    if (r.level === "formula" && r.exact === false) t = "~" + t;
    let html = t + ' <span class="rk">(' + (r.rank === null || r.rank === undefined ? "-" : r.rank) + ")</span>";
    if (r.rank_change) {
      const [a, b] = r.rank_change.split("->").map(Number);
      html += b < a ? ' <span class="up" title="rank ' + esc(r.rank_change) + ' vs the previous level">&#9650;</span>'
                    : ' <span class="down" title="rank ' + esc(r.rank_change) + ' vs the previous level">&#9660;</span>';
    }
    let title = r.note || r.semantics || "";
    if (r.oom) {  // does not fit device memory (compare's does_not_fit): shown, not ranked, as the text table
      const why = oomText(r.oom);
      html += ' <span class="oom" title="' + esc(why) + '">OOM</span>';
      title = title ? why + "\n" + title : why;
    }
    if (r.level === "optimum" && r.status === "feasible" && r.lower_bound !== null) html += ' <span class="rk">lb ' + esc(fmtTime(r.lower_bound, r.time_unit).replace(/ (ms|units)$/, "")) + "</span>";
    return [html, "", title];
  }
  function oomText(devices) {
    const named = devices.length ? ": device" + (devices.length > 1 ? "s " : " ") + devices.join(", ") : "";
    return "does not fit device memory" + named + " (weights, gradients, optimizer state and activations over the device's capacity)";
  }
  function renderTables() {
    const host = $("cmp-tables");
    host.textContent = "";
    const want = $("cfg-filter").value;
    for (const cfg of configs) {
      if (want && want !== cfg) continue;
      const sub = rows.filter((r) => r.config === cfg);
      const levels = LEVEL_ORDER.filter((lv) => sub.some((r) => r.level === lv));
      const sim = ["async", "contention", "slot", "formula"].find((lv) => sub.some((r) => r.level === lv && r.makespan !== null));
      const valued = sub.find((r) => r.makespan !== null) || sub[0];
      const tab = el("table", { class: "cmp" });
      const cap = el("caption", {}, cfg);
      cap.appendChild(el("span", { class: "unit" }, "time in " + (valued.time_unit === "s" ? "ms" : valued.time_unit) +
        ", memory in " + (valued.memory_unit === "bytes" ? "GiB" : valued.memory_unit) + "; (rank), \u25B2\u25BC rank change vs the previous level"));
      tab.appendChild(cap);
      const head = el("tr");
      // a measured level brings its own peaks (the run's saved activations), shown beside the model's
      const measuredPeak = sub.some((r) => r.level === "measured" && r.peak_activation !== null && r.peak_activation !== undefined);
      // both read the optimum: a configuration without it has neither column (as the text table)
      const hasOpt = sub.some((r) => r.level === "optimum");
      for (const h of ["schedule", ...levels, ...(sim ? ["bubble (" + sim + ")", "peak act. (" + sim + ")"] : []), ...(measuredPeak ? ["peak act. (measured)"] : []), ...(hasOpt ? ["peak act. (opt.)", "gap to bound"] : []), "Z3"])
        head.appendChild(el("th", {}, h));
      tab.appendChild(head);
      for (const sched of [...new Set(sub.map((r) => r.schedule))]) {
        const by = {};
        sub.filter((r) => r.schedule === sched).forEach((r) => (by[r.level] = r));
        const tr = el("tr");
        const has = pointIndex(cfg, sched) >= 0;
        if (has) {
          tr.className = "clickable";
          tr.title = "show its Gantt charts";
          tr.addEventListener("click", () => { selectPoint(cfg, sched); $("schedule").scrollIntoView({ behavior: "smooth" }); });
        }
        if (state.point && state.point.config === cfg && state.point.schedule === sched) tr.className += " selected";
        tr.appendChild(el("td", {}, sched));
        for (const lv of levels) {
          const r = by[lv];
          const td = el("td");
          if (r) {
            const [html, cls, title] = cell(r);
            td.innerHTML = html;
            if (cls) td.className = cls;
            td.title = title;
          }
          tr.appendChild(td);
        }
        if (sim) {
          const r = by[sim] || {};
          // a closed form that is only a bound gives bounds here too: marked "~" as its makespan is
          const bound = sim === "formula" && r.exact === false ? "~" : "";
          const none = (x) => x === null || x === undefined || Number.isNaN(x);
          tr.appendChild(el("td", {}, none(r.bubble_ratio) ? "-" : bound + r.bubble_ratio.toFixed(3)));
          tr.appendChild(el("td", {}, none(r.peak_activation) ? "-" : bound + fmtMem(r.peak_activation, r.memory_unit)));
        }
        if (measuredPeak) {
          const r = by.measured || {};
          tr.appendChild(el("td", {}, fmtMem(r.peak_activation, r.memory_unit)));
        }
        const a = by.async, o = by.optimum;
        if (hasOpt) tr.appendChild(el("td", {}, o ? fmtMem(o.peak_activation, o.memory_unit) : "-"));
        let gap = "-", gapTitle = "";
        // a schedule whose own peak is over the optimum's cap: the bound holds for the schedules
        // within the cap, not for it, so no gap (the command line says the same)
        const known = (x) => x !== null && x !== undefined && !Number.isNaN(x);
        if (a && o && known(o.memory_cap) && known(a.peak_activation) && a.peak_activation > o.memory_cap * (1 + 1e-9)) {
          gap = "over cap";
          gapTitle = "its own peak " + fmtMem(a.peak_activation, a.memory_unit) + " is over the cap " +
            fmtMem(o.memory_cap, o.memory_unit) + ": the optimum and its bound hold for the schedules within the cap";
        } else if (a && o && known(a.gap_to_bound)) {
          gap = (o.status === "optimal" ? "" : "\u2264") + (100 * Math.max(a.gap_to_bound, 0)).toFixed(1) + "%";
          if (String(o.note || "").startsWith(UNLIKE)) {  // as the text table: the optimum ran other ops
            gap += "+";
            gapTitle = o.note;
          }
        }
        if (hasOpt) tr.appendChild(el("td", { title: gapTitle }, gap));
        const v = (sub.find((r) => r.schedule === sched) || {}).verified || "";
        const z = el("td", { class: v === "valid" ? "valid" : v.startsWith("INVALID") ? "invalid" : "na", title: v },
          v === "valid" ? "valid" : v.startsWith("INVALID") ? "INVALID" : v ? "n/a" : "-");
        tr.appendChild(z);
        tab.appendChild(tr);
      }
      host.appendChild(tab);
    }
  }
  function renderLegend() {
    const host = $("legend");
    for (const lv of LEVEL_ORDER) {
      host.appendChild(el("b", {}, lv));
      host.appendChild(el("span", {}, DATA.levels[lv]));
    }
    const extra = [["(n)", "rank by makespan within the configuration and level, 1 = fastest"],
      ["\u25B2 \u25BC", "rank better / worse than under the previous level that produced numbers"],
      ["~", "the closed form is only a bound here: shown, not ranked"],
      ["peak act. (opt.)", "the optimum schedule's highest per-device activation peak"],
      ["gap to bound", "(async makespan \u2212 bound) / async makespan; the bound is the CP-SAT optimum of the same placement capped at each schedule's own peak unless --memory-cap says otherwise (\u2264: against the proven bound; over cap: the schedule's own peak is above that cap, so the bound is not its)"],
      ["Z3", "the verifier proved " + PROVED]];
    if (!LEVEL_ORDER.includes("optimum"))  // both read the optimum: no optimum level, nothing to explain
      extra.splice(3, 2);
    if (LEVEL_ORDER.includes("optimum") && rows.some((r) => r.level === "optimum" && String(r.note || "").startsWith(UNLIKE)))
      // after "gap to bound", as the text table's legend says it; only where a gap carries it
      extra.splice(5, 0, ["+", "beside a gap to bound: the family runs ops the solver does not model (overlapped F&B slots, B mixed with I/W): unlike steps, read with care (hover the gap for the note)"]);
    if (rows.some((r) => r.oom))  // after "~", where the text table's legend has it
      extra.splice(3, 0, ["OOM (-)", "does not fit device memory: weights, gradients, optimizer state and activations over the device's capacity (hover the cell for the devices; ppverify simulate names them too): shown, not ranked; the others are ranked among themselves"]);
    if (LEVEL_ORDER.includes("measured"))
      extra.push(["peak act. (measured)", "highest device's activations autograd saved in the real run, each stage's measured bytes counted as that stage's activation"]);
    for (const [k, v] of extra) { host.appendChild(el("b", {}, k)); host.appendChild(el("span", {}, v)); }
  }

  // ---------- Gantt ----------
  const points = DATA.points;
  const state = { point: null, levels: [], t0: 0, t1: 1, layout: null, drawn: {}, hatched: {}, memTicks: [], memText: null, memLevel: null, hover: null, renderMs: 0 };
  const GUTTER = 112;
  function pointIndex(cfg, sched) { return points.findIndex((p) => p.config === cfg && p.schedule === sched); }

  function prepare(pt) {  // per level: per-device op positions sorted by start (hit tests)
    if (!pt.kind) pt.kind = pt.ops.map(opKind);
    for (const lv in pt.levels) {
      const L = pt.levels[lv];
      if (L.byDev) continue;
      L.byDev = Array.from({ length: pt.p }, () => []);
      for (let i = 0; i < L.o.length; i++) if (L.d[i] >= 0 && L.d[i] < pt.p) L.byDev[L.d[i]].push(i);
      for (const arr of L.byDev) arr.sort((a, b) => L.s[a] - L.s[b]);
      // ops that share time on a device (an overlapped F&B slot) take the top and bottom half-row
      L.half = new Int8Array(L.o.length);
      const eps = 1e-9 * Math.max(L.makespan, 1e-30);
      for (const arr of L.byDev) for (let k = 1; k < arr.length; k++)
        if (L.s[arr[k]] < L.e[arr[k - 1]] - eps) { L.half[arr[k - 1]] = 1; L.half[arr[k]] = 2; }
      const links = new Map();
      for (let t = 0; t < L.tr.sd.length; t++) {
        const key = L.tr.sd[t] + "\u2192" + L.tr.dd[t];
        if (!links.has(key)) links.set(key, []);
        links.get(key).push(t);
      }
      L.links = [...links.entries()].sort((a, b) => a[0].localeCompare(b[0], undefined, { numeric: true }));
      L.opPos = new Map();
      for (let i = 0; i < L.o.length; i++) if (!L.opPos.has(L.o[i])) L.opPos.set(L.o[i], i);
    }
  }

  function layout(pt, width) {
    const rowH = Math.max(5, Math.min(20, Math.floor(240 / pt.p)));
    const linkH = Math.max(3, Math.min(7, Math.floor(rowH / 2)));
    let y = 24;
    const blocks = [];
    for (const lv of state.levels) {
      const L = pt.levels[lv];
      const b = { level: lv, top: y, rowH, linkH, devTop: y + 18 };
      b.linkTop = b.devTop + pt.p * rowH + 3;
      b.bottom = b.linkTop + L.links.length * linkH;
      blocks.push(b);
      y = b.bottom + 12;
    }
    const memTop = y + 6, memH = state.memLevel ? 110 : 0;
    return { width, blocks, memTop, memH, height: memTop + memH + (memH ? 24 : 0) + 4 };
  }

  function opY(L, b, i, pad) {  // [y, height] of op i's bar in block b
    const y = b.devTop + L.d[i] * b.rowH, h = L.half ? L.half[i] : 0;
    if (!h) return [y + pad, b.rowH - 2 * pad];
    const hh = (b.rowH - 2 * pad) / 2;
    return [y + pad + (h - 1) * hh, hh];
  }
  const X = (t) => GUTTER + ((t - state.t0) / (state.t1 - state.t0)) * (state.layout.width - GUTTER - 10);
  const T = (x) => state.t0 + ((x - GUTTER) / (state.layout.width - GUTTER - 10)) * (state.t1 - state.t0);

  function niceTicks(a, b, n) {
    const span = b - a, step0 = span / n, mag = 10 ** Math.floor(Math.log10(step0));
    const step = [1, 2, 5, 10].map((k) => k * mag).find((s) => s >= step0) || 10 * mag;
    const out = [];
    for (let t = Math.ceil(a / step) * step; t <= b + 1e-12 * span; t += step) out.push(t);
    return out;
  }

  function draw() {
    const pt = state.point;
    const cv = $("gantt"), ov = $("gantt-overlay");
    if (!pt) return;
    const t0 = performance.now();
    const width = $("gantt-wrap").clientWidth || 1000;
    state.layout = layout(pt, width);
    const dpr = window.devicePixelRatio || 1, H = state.layout.height;
    for (const c of [cv, ov]) {
      c.width = Math.round(width * dpr); c.height = Math.round(H * dpr);
      c.style.width = width + "px"; c.style.height = H + "px";
    }
    const ctx = cv.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.fillStyle = "#fff"; ctx.fillRect(0, 0, width, H);
    const unit = pt.levels[state.levels[0]] ? pt.levels[state.levels[0]].time_unit : "units";
    // time axis and grid
    const ticks = niceTicks(state.t0, state.t1, Math.max(3, Math.floor((width - GUTTER) / 110)));
    ctx.font = "11px system-ui, sans-serif"; ctx.textBaseline = "middle";
    ctx.strokeStyle = "#edf0f4"; ctx.fillStyle = "#5f6b7a"; ctx.lineWidth = 1;
    for (const t of ticks) {
      const x = Math.round(X(t)) + 0.5;
      ctx.beginPath(); ctx.moveTo(x, 18); ctx.lineTo(x, H - 4); ctx.stroke();
      ctx.textAlign = "left"; ctx.fillText(fmtTime(t, unit), x + 3, 9);
    }
    const core = new Set(pt.verdict.core || []);
    state.drawn = {}; state.hatched = {}; state.memTicks = [];
    for (const b of state.layout.blocks) drawLevel(ctx, pt, b, core, width);
    if (state.memLevel && pt.levels[state.memLevel]) drawMemory(ctx, pt, width);
    ctx.fillStyle = "#fff"; ctx.fillRect(0, 0, GUTTER - 2, 18);
    state.renderMs = performance.now() - t0;
    drawOverlay();
  }

  function drawLevel(ctx, pt, b, core, width) {
    const L = pt.levels[b.level];
    const drawn = [];
    ctx.textAlign = "left"; ctx.fillStyle = "#1d2330"; ctx.font = "600 12px system-ui, sans-serif";
    ctx.fillText(b.level + "  \u00B7  makespan " + fmtTime(L.makespan, L.time_unit), 6, b.top + 8);
    ctx.font = "11px system-ui, sans-serif"; ctx.fillStyle = "#5f6b7a";
    for (let d = 0; d < pt.p; d++) {
      const y = b.devTop + d * b.rowH;
      if (d % 2) { ctx.fillStyle = "#f7f9fc"; ctx.fillRect(GUTTER, y, width - GUTTER, b.rowH); }
      if (b.rowH >= 9 || d % Math.ceil(9 / b.rowH) === 0) { ctx.fillStyle = "#5f6b7a"; ctx.fillText("device " + d, 8, y + b.rowH / 2); }
    }
    ctx.save();
    ctx.beginPath(); ctx.rect(GUTTER, b.top, width - GUTTER, b.bottom - b.top); ctx.clip();
    const xmin = GUTTER, xmax = width;
    const byKind = {}, ta = state.t0, tb = state.t1, kind = pt.kind;
    for (let i = 0; i < L.o.length; i++) {
      if (L.e[i] < ta || L.s[i] > tb) continue;
      drawn.push(i);
      const k = kind[L.o[i]];
      (byKind[k] = byKind[k] || []).push(i);
    }
    const pad = b.rowH >= 10 ? 1 : 0;
    const dense = drawn.length > 0.5 * (xmax - xmin) * pt.p;
    if (dense) drawDensity(ctx, pt, L, b, byKind, xmin, xmax, pad);
    else for (const k in byKind) {
      ctx.fillStyle = KIND_COLOR[k] || "#888";
      ctx.beginPath();
      for (const i of byKind[k]) {
        const x0 = X(L.s[i]), w = Math.max(0.4, X(L.e[i]) - x0), [y, h] = opY(L, b, i, pad);  // sub-pixel ops blend by coverage
        ctx.rect(x0, y, w, h);
      }
      ctx.fill();
    }
    const hatched = [];
    if (pt.pipes && pt.pipes.length) {
      for (const i of drawn) if (pt.pipes[L.o[i]] === 1) hatched.push(i);
      if (!dense && hatched.length) {
        ctx.fillStyle = hatch(ctx);
        ctx.beginPath();
        for (const i of hatched) { const x0 = X(L.s[i]), [y, h] = opY(L, b, i, pad); ctx.rect(x0, y, Math.max(0.4, X(L.e[i]) - x0), h); }
        ctx.fill();
      }
    }
    state.hatched[b.level] = hatched;
    if (b.rowH >= 12 && !dense) {  // separators and labels where there is room
      ctx.strokeStyle = "rgba(255,255,255,0.9)"; ctx.lineWidth = 1;
      ctx.fillStyle = "#fff"; ctx.font = "10px system-ui, sans-serif"; ctx.textAlign = "center";
      for (const i of drawn) {
        const x0 = X(L.s[i]), x1 = X(L.e[i]), [y, h] = opY(L, b, i, pad);
        if (x1 - x0 > 4) { ctx.beginPath(); ctx.moveTo(Math.round(x0) + 0.5, y); ctx.lineTo(Math.round(x0) + 0.5, y + h); ctx.stroke(); }
        if (x1 - x0 > 26 && h >= 10) ctx.fillText(pt.ops[L.o[i]], (Math.max(x0, xmin) + Math.min(x1, xmax)) / 2, y + h / 2);
      }
    }
    if (core.size) {
      ctx.strokeStyle = "#d50000"; ctx.lineWidth = 2.5;
      for (const i of drawn) if (core.has(L.o[i])) {
        const x0 = X(L.s[i]), [y, h] = opY(L, b, i, 0);
        ctx.strokeRect(x0 + 1, y + 1, Math.max(2, X(L.e[i]) - x0 - 2), h - 2);
      }
    }
    // transfers on their links
    L.tr.kinds.forEach((kname, kk) => {  // one path per transfer kind
      ctx.fillStyle = trColor(kname);
      ctx.beginPath();
      for (let r = 0; r < L.links.length; r++) {
        const y = b.linkTop + r * b.linkH;
        for (const t of L.links[r][1]) {
          if (L.tr.k[t] !== kk || L.tr.e[t] < ta || L.tr.s[t] > tb) continue;
          const x0 = X(L.tr.s[t]);
          ctx.rect(x0, y + 0.5, Math.max(1, X(L.tr.e[t]) - x0), b.linkH - 1);
        }
      }
      ctx.fill();
    });
    ctx.restore();
    if (L.links.length) {
      ctx.fillStyle = "#8a94a3"; ctx.font = "9px system-ui, sans-serif"; ctx.textAlign = "left";
      const every = Math.ceil(9 / b.linkH);
      for (let r = 0; r < L.links.length; r += every) ctx.fillText("link " + L.links[r][0], 16, b.linkTop + r * b.linkH + b.linkH / 2);
    }
    ctx.strokeStyle = "#dde2ea"; ctx.beginPath(); ctx.moveTo(0, b.bottom + 6.5); ctx.lineTo(width, b.bottom + 6.5); ctx.stroke();
    state.drawn[b.level] = drawn;
  }

  // Zoomed out (ops narrower than a pixel on average): each pixel column of a device row shows the
  // share of that column's time each op kind ran, stacked, so F, B, I, W and idle stay visible.
  function drawDensity(ctx, pt, L, b, byKind, xmin, xmax) {
    const W = Math.ceil(xmax - xmin), kinds = Object.keys(byKind).sort((a, c) => "FBIW".indexOf(a) - "FBIW".indexOf(c));
    const cov = {};
    for (const k of kinds) {
      const a = (cov[k] = new Float32Array(W * pt.p));
      for (const i of byKind[k]) {
        let x0 = X(L.s[i]) - xmin, x1 = X(L.e[i]) - xmin;
        x0 = Math.max(0, x0); x1 = Math.min(W, x1);
        const row = L.d[i] * W;
        for (let px = Math.floor(x0); px < x1 && px < W; px++) a[row + px] += Math.min(px + 1, x1) - Math.max(px, x0);
      }
    }
    const used = new Float32Array(W * pt.p);
    for (const k of kinds) {
      ctx.fillStyle = KIND_COLOR[k] || "#888";
      ctx.beginPath();
      const a = cov[k];
      for (let d = 0; d < pt.p; d++) {
        const y = b.devTop + d * b.rowH;
        for (let px = 0; px < W; px++) {
          const f = Math.min(1, a[d * W + px]);
          if (f <= 0) continue;
          const u = used[d * W + px];
          ctx.rect(xmin + px, y + u * b.rowH, 1, f * b.rowH);
          used[d * W + px] = Math.min(1, u + f);
        }
      }
      ctx.fill();
    }
  }

  const DEV_COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];
  function drawMemory(ctx, pt, width) {
    const L = pt.levels[state.memLevel], top = state.layout.memTop, h = state.layout.memH;
    // each curve is what its device holds: its activations on top of its weights, gradients and
    // optimizer state (held all step, as `simulate` counts its peak), so the capacity line, the
    // whole device's, is crossed exactly where the device runs out of memory
    const w = L.weights || [], base = (d) => w[d] || 0, held = w.some((x) => x > 0);
    const peaks = L.mem.map(([, m], d) => m.reduce((a, v) => Math.max(a, v), 0) + base(d));
    const peak = Math.max(0, ...peaks);
    const cap = L.memory_capacity;
    let ymax = peak;
    if (cap && cap < ymax * 3) ymax = Math.max(ymax, cap);  // the axis reaches the line; the label says the peak
    ymax = ymax || 1;
    const Y = (v) => top + h - (v / ymax) * (h - 4);
    ctx.textAlign = "left"; ctx.fillStyle = "#1d2330"; ctx.font = "600 12px system-ui, sans-serif";
    // bytes are shown in GiB: the ticks are round in GiB (0, 5, 10), not in bytes (5e9 = 4.66 GiB),
    // and the unit goes in the heading so the labels stay short beside the "peak" line
    const gib = L.memory_unit === "bytes" || L.memory_unit === "B", scale = gib ? 2 ** 30 : 1;
    const heading = "memory per device (" + state.memLevel + (gib ? ", GiB" : "") + (held ? "; activations + weights/gradients/optimizer state" : "") + ")";
    ctx.fillText(heading, 6, top - 2);
    ctx.font = "11px system-ui, sans-serif"; ctx.fillStyle = "#5f6b7a";
    // the y scale: round values from 0 to the peak, labelled at the gutter's right edge, with grid lines
    ctx.textAlign = "right"; ctx.font = "10px system-ui, sans-serif";
    const yticks = niceTicks(0, ymax / scale, 4);
    for (const g of yticks) {
      const v = g * scale, y = Math.round(Y(v)) + 0.5, label = gib ? String(+g.toPrecision(3)) : fmtMem(v, L.memory_unit);
      ctx.strokeStyle = "#edf0f4"; ctx.lineWidth = 1; ctx.beginPath(); ctx.moveTo(GUTTER, y); ctx.lineTo(width, y); ctx.stroke();
      ctx.fillStyle = "#5f6b7a"; ctx.fillText(label, GUTTER - 4, Math.min(Math.max(y, top + 4), top + h - 2));
      state.memTicks.push(label);
    }
    ctx.textAlign = "left";
    ctx.save(); ctx.beginPath(); ctx.rect(GUTTER, top - 4, width - GUTTER, h + 8); ctx.clip();
    L.mem.forEach(([t, m], d) => {
      ctx.strokeStyle = DEV_COLORS[d % DEV_COLORS.length]; ctx.lineWidth = 1.5; ctx.beginPath();
      const b0 = base(d);
      let prev = b0; ctx.moveTo(X(state.t0), Y(b0));
      for (let k = 0; k < t.length; k++) { const x = X(t[k]); ctx.lineTo(x, Y(prev)); ctx.lineTo(x, Y(m[k] + b0)); prev = m[k] + b0; }
      ctx.lineTo(X(state.t1), Y(prev)); ctx.stroke();
    });
    let capText = "";
    if (cap && cap <= ymax) {
      ctx.strokeStyle = "#c62828"; ctx.setLineDash([5, 4]); ctx.beginPath(); ctx.moveTo(GUTTER, Y(cap)); ctx.lineTo(width, Y(cap)); ctx.stroke(); ctx.setLineDash([]);
      capText = "device capacity " + fmtMem(cap, L.memory_unit);
      ctx.textAlign = "right"; ctx.fillStyle = "#c62828"; ctx.font = "10px system-ui, sans-serif";
      ctx.fillText(capText, width - 14, Math.max(Y(cap) - 4, top + 6));
      ctx.textAlign = "left";
    }
    ctx.restore();
    ctx.font = "10px system-ui, sans-serif";
    // the highest curve's own top (never the axis' end, which reaches up to the capacity line)
    const peakText = "peak " + fmtMem(peak, L.memory_unit);
    ctx.fillStyle = "#5f6b7a"; ctx.fillText(peakText, 8, top + 12);
    // one column of device keys left of the scale's labels (the first seven; the rest share the
    // colours), each marked OOM when its curve crosses the capacity, as `simulate` marks it
    const keys = L.mem.map((_, d) => "\u2014 dev " + d + (cap && peaks[d] > cap ? " OOM" : "") + (d === 6 && L.mem.length > 7 ? " \u2026" : ""));
    keys.forEach((k, d) => { if (d < 7) { ctx.fillStyle = DEV_COLORS[d % DEV_COLORS.length]; ctx.fillText(k, 8, top + 26 + 11 * d); } });
    state.memText = { heading, peak: peakText, capacity: capText, keys: keys.slice(0, 7), peaks };
  }

  // ---------- hover ----------
  function hit(x, y) {
    const pt = state.point;
    if (!pt || !state.layout || x < GUTTER) return null;
    const t = T(x);
    for (const b of state.layout.blocks) {
      const L = pt.levels[b.level];
      if (y >= b.devTop && y < b.linkTop - 3) {
        const d = Math.floor((y - b.devTop) / b.rowH), arr = L.byDev[d];
        if (!arr) return null;
        const half = (y - b.devTop - d * b.rowH) < b.rowH / 2 ? 1 : 2;
        const fits = (i) => !L.half[i] || L.half[i] === half;
        let lo = 0, hi = arr.length - 1, k = -1;
        while (lo <= hi) { const mid = (lo + hi) >> 1; if (L.s[arr[mid]] <= t) { k = mid; lo = mid + 1; } else hi = mid - 1; }
        const tol = (state.t1 - state.t0) / (state.layout.width - GUTTER);  // one pixel
        for (let j = k; j >= 0 && j > k - 4; j--) if (L.e[arr[j]] + tol >= t && fits(arr[j])) return { b, L, i: arr[j], type: "op" };
        if (k + 1 < arr.length && L.s[arr[k + 1]] - tol <= t && fits(arr[k + 1])) return { b, L, i: arr[k + 1], type: "op" };
        return null;
      }
      if (y >= b.linkTop && y < b.bottom) {
        const link = L.links[Math.floor((y - b.linkTop) / b.linkH)];
        if (!link) return null;
        const tol = 2 * (state.t1 - state.t0) / (state.layout.width - GUTTER);
        for (const tr of link[1]) if (L.tr.s[tr] - tol <= t && t <= L.tr.e[tr] + tol) return { b, L, i: tr, type: "transfer" };
      }
    }
    return null;
  }

  function waitText(pt, L, i) {
    const code = L.w[i], ref = L.wr[i], u = L.time_unit;
    let txt = WAIT_TEXT[code] || "";
    if (code === 1) txt += ": " + pt.ops[L.o[ref]] + " ran until " + fmtTime(L.e[ref], u);
    if (code === 3) txt += ": " + pt.ops[L.o[ref]] + " on device " + L.d[ref] + " ended at " + fmtTime(L.e[ref], u);
    if (code === 2) txt += ": " + (L.tr.kinds[L.tr.k[ref]] || "transfer") + " of " + pt.ops[L.o[L.tr.so[ref]]] + " from device " + L.tr.sd[ref] +
      ", sent " + fmtTime(L.tr.s[ref], u) + ", arrived " + fmtTime(L.tr.e[ref], u);
    if (code === 2 || code === 3) {  // the device was also idle-bound?
      const arr = L.byDev[L.d[i]], k = arr.indexOf(i);
      if (k > 0 && Math.abs(L.e[arr[k - 1]] - L.s[i]) <= 1e-9 * Math.max(L.makespan, 1e-30)) txt += " (its device freed at the same time)";
    }
    return txt;
  }

  function tipHtml(h) {
    const pt = state.point, L = h.L, u = esc(L.time_unit), op = (j) => esc(pt.ops[L.o[j]]), kind = (t) => esc(L.tr.kinds[L.tr.k[t]]);
    let html;
    if (h.type === "op") {
      const i = h.i, label = op(i);
      html = "<b>" + label + "</b> &middot; " + esc(h.b.level) + " &middot; device " + L.d[i] +
        "<br>start " + fmtTime(L.s[i], u) + ", end " + fmtTime(L.e[i], u) + " (" + fmtTime(L.e[i] - L.s[i], u) + ")" +
        '<br><span class="w">waited for: ' + esc(waitText(pt, L, i)) + "</span>";
      if ((pt.verdict.core || []).includes(L.o[i])) html += '<br><span class="w">in the minimal core of the violation</span>';
    } else {
      const t = h.i, so = L.tr.so[t], dd = L.tr.do[t];
      html = "<b>" + kind(t) + "</b> &middot; link " + L.tr.sd[t] + "\u2192" + L.tr.dd[t] +
        (so >= 0 ? "<br>" + op(so) + (dd >= 0 ? " \u2192 " + op(dd) : "") : "") +
        "<br>" + fmtTime(L.tr.s[t], u) + " \u2192 " + fmtTime(L.tr.e[t], u) + (L.tr.b[t] ? ", " + fmtMem(L.tr.b[t], "bytes") : "");
      const q = L.tr.q ? L.tr.q[t] : -1;
      if (q >= 0) {
        const qs = L.tr.so[q];
        html += '<br><span class="w">queued behind: ' + kind(q) + (qs >= 0 ? " of " + op(qs) : "") +
          " on link " + L.tr.sd[q] + "\u2192" + L.tr.dd[q] + " until " + fmtTime(L.tr.e[q], u) +
          (so >= 0 ? " (its data was ready at " + fmtTime(L.e[so], u) + ")" : "") + "</span>";
      }
    }
    return html;
  }

  function showTip(h, x, y) {
    const tip = $("tooltip");
    tip.innerHTML = tipHtml(h);
    tip.style.display = "block";
    const W = $("gantt-wrap").clientWidth;
    tip.style.left = Math.min(x + 14, W - tip.offsetWidth - 4) + "px";
    tip.style.top = (y + 16) + "px";
  }

  function drawOverlay() {
    const ov = $("gantt-overlay"), ctx = ov.getContext("2d"), dpr = window.devicePixelRatio || 1;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, ov.width, ov.height);
    const h = state.hover;
    if (!h || h.type !== "op") return;
    const L = h.L, b = h.b, i = h.i;
    ctx.strokeStyle = "#111"; ctx.lineWidth = 2;
    const [y, hh] = opY(L, b, i, 0);
    ctx.strokeRect(X(L.s[i]), y, Math.max(2, X(L.e[i]) - X(L.s[i])), hh);
    const code = L.w[i], ref = L.wr[i];
    ctx.setLineDash([4, 3]); ctx.strokeStyle = "#ff9800";
    if (code === 1 || code === 3) { const [yr, hr] = opY(L, b, ref, 0); ctx.strokeRect(X(L.s[ref]), yr, Math.max(2, X(L.e[ref]) - X(L.s[ref])), hr); }
    if (code === 2) {
      const r = L.links.findIndex(([, ts]) => ts.includes(ref));
      if (r >= 0) ctx.strokeRect(X(L.tr.s[ref]), b.linkTop + r * b.linkH, Math.max(2, X(L.tr.e[ref]) - X(L.tr.s[ref])), b.linkH);
    }
    ctx.setLineDash([]);
  }

  // ---------- zoom and pan ----------
  let pending = false;
  function redraw() { if (!pending) { pending = true; requestAnimationFrame(() => { pending = false; draw(); }); } }
  function fullRange() {
    const pt = state.point;
    const ms = Math.max(1e-30, ...state.levels.map((lv) => pt.levels[lv].makespan));
    return [0, ms * 1.02];
  }
  function zoom(factor, x) {
    const tm = x === undefined ? (state.t0 + state.t1) / 2 : T(x);
    const [f0, f1] = fullRange(), span = Math.min((state.t1 - state.t0) * factor, f1 - f0);
    const minSpan = (f1 - f0) * 1e-6;
    const s = Math.max(span, minSpan), a = (tm - state.t0) / (state.t1 - state.t0);
    state.t0 = tm - a * s; state.t1 = state.t0 + s;
    clampView(); redraw();
  }
  function clampView() {
    const [f0, f1] = fullRange(), s = state.t1 - state.t0;
    if (state.t0 < f0) { state.t0 = f0; state.t1 = f0 + s; }
    if (state.t1 > f1) { state.t1 = f1; state.t0 = Math.max(f0, f1 - s); }
  }
  function resetView() { [state.t0, state.t1] = fullRange(); redraw(); }

  function installInteraction() {
    const cv = $("gantt");
    cv.addEventListener("wheel", (ev) => { ev.preventDefault(); zoom(ev.deltaY > 0 ? 1.25 : 0.8, ev.offsetX); }, { passive: false });
    let drag = null;
    cv.addEventListener("mousedown", (ev) => { drag = { x: ev.clientX, t0: state.t0, t1: state.t1 }; cv.classList.add("dragging"); });
    window.addEventListener("mouseup", () => { drag = null; cv.classList.remove("dragging"); });
    window.addEventListener("mousemove", (ev) => {
      if (!drag) return;
      const dt = ((ev.clientX - drag.x) / (state.layout.width - GUTTER - 10)) * (drag.t1 - drag.t0);
      state.t0 = drag.t0 - dt; state.t1 = drag.t1 - dt; clampView(); redraw();
    });
    cv.addEventListener("mousemove", (ev) => {
      if (drag) return;
      const h = hit(ev.offsetX, ev.offsetY);
      state.hover = h;
      if (h) showTip(h, ev.offsetX, ev.offsetY); else $("tooltip").style.display = "none";
      drawOverlay();
    });
    cv.addEventListener("mouseleave", () => { state.hover = null; $("tooltip").style.display = "none"; drawOverlay(); });
    cv.addEventListener("dblclick", resetView);
    $("zoom-in").addEventListener("click", () => zoom(0.5));
    $("zoom-out").addEventListener("click", () => zoom(2));
    $("zoom-reset").addEventListener("click", resetView);
    window.addEventListener("resize", redraw);
  }

  // ---------- selection ----------
  function selectPoint(cfg, sched) {
    const k = pointIndex(cfg, sched);
    if (k < 0) return false;
    const pt = points[k];
    prepare(pt);
    state.point = pt;
    // an INVALID schedule opens on its programs as written (other levels: another order, or none)
    state.levels = pt.levels.program ? ["program"] : Object.keys(pt.levels);
    state.memLevel = pt.levels.program ? null : ["async", "contention", "optimum", "slot"].find((lv) => pt.levels[lv] && pt.levels[lv].mem.length) ||
      state.levels.find((lv) => pt.levels[lv].mem.length) || null;
    $("pt-config").value = cfg;
    fillSchedules();
    $("pt-schedule").value = sched;
    const boxes = $("pt-levels");
    boxes.textContent = "";
    for (const lv of Object.keys(pt.levels)) {
      const lab = el("label");
      const cb = el("input", { type: "checkbox" });
      cb.checked = state.levels.includes(lv);
      cb.addEventListener("change", () => {
        state.levels = Object.keys(pt.levels).filter((l, j) => boxes.querySelectorAll("input")[j].checked);
        if (!state.levels.length) { cb.checked = true; state.levels = [lv]; }
        resetView();
      });
      lab.appendChild(cb); lab.appendChild(document.createTextNode(" " + lv));
      lab.title = DATA.levels[lv] || (lv === "program" ? "the programs as written (no engine could run this schedule)" : lv);
      boxes.appendChild(lab);
    }
    const ms = $("pt-mem");
    ms.textContent = "";
    for (const lv of Object.keys(pt.levels)) if (pt.levels[lv].mem.length) ms.appendChild(el("option", { value: lv }, lv));
    ms.appendChild(el("option", { value: "" }, "none"));
    ms.value = state.memLevel || "";
    renderVerdict(pt);
    [state.t0, state.t1] = fullRange();
    draw();
    renderTables();
    return true;
  }
  function fillSchedules() {
    const cfg = $("pt-config").value, sel = $("pt-schedule"), keep = sel.value;
    sel.textContent = "";
    for (const p of points) if (p.config === cfg) sel.appendChild(el("option", { value: p.schedule }, p.schedule));
    if ([...sel.options].some((o) => o.value === keep)) sel.value = keep;
  }
  function renderVerdict(pt) {
    const host = $("verdict"), v = pt.verdict || {};
    host.className = "verdict" + (v.verdict === "INVALID" ? " bad" : "");
    host.textContent = "";
    const head = el("div");
    head.innerHTML = "<b>" + esc(pt.schedule) + "</b> &middot; p=" + pt.p + " m=" + pt.m + " &middot; " + pt.ops.length + " ops &middot; Z3: ";
    head.appendChild(el("span", { class: v.verdict === "valid" ? "valid" : v.verdict === "INVALID" ? "invalid" : "na" },
      v.verdict === "valid" ? "VALID (completeness, placement, dependencies, exclusivity, deadlock freedom proven)" : v.verdict === "INVALID" ? "INVALID" : "not checked"));
    host.appendChild(head);
    for (const x of v.violations || []) {
      const line = el("div", {}, x.property + ": " + x.message + (x.rule ? " [" + x.rule + "]" : ""));
      if (x.core && x.core.length) { line.appendChild(document.createTextNode(" core: ")); line.appendChild(el("span", { class: "core" }, x.core.join(" "))); }
      host.appendChild(line);
    }
    if (v.verdict === "INVALID" && (v.core || []).length) host.appendChild(el("div", { class: "muted" }, "The minimal core is outlined in red in the charts."));
  }

  // ---------- verification and findings sections ----------
  function renderVerification() {
    const host = $("verif"), seen = new Set(), tab = el("table", { class: "cmp" });
    const head = el("tr");
    ["schedule", "p", "m", "verdict", "first violation / what was proven"].forEach((h) => head.appendChild(el("th", {}, h)));
    tab.appendChild(head);
    for (const r of rows) {
      const key = r.schedule + "|" + r.p + "|" + r.m;
      if (seen.has(key)) continue;
      seen.add(key);
      const v = r.verified || "", tr = el("tr");
      tr.appendChild(el("td", {}, r.schedule)); tr.appendChild(el("td", {}, String(r.p))); tr.appendChild(el("td", {}, String(r.m)));
      tr.appendChild(el("td", { class: v === "valid" ? "valid" : v.startsWith("INVALID") ? "invalid" : "na" }, v === "valid" ? "valid" : v.startsWith("INVALID") ? "INVALID" : v ? "n/a" : "not checked"));
      const td = el("td", {}, v === "valid" ? PROVED : v.replace(/^INVALID: /, ""));
      td.style.textAlign = "left"; td.style.whiteSpace = "normal";
      tr.appendChild(td);
      const pk = points.findIndex((p) => p.schedule === r.schedule && p.p === r.p && p.m === r.m);
      if (pk >= 0) { tr.className = "clickable"; tr.addEventListener("click", () => { selectPoint(points[pk].config, points[pk].schedule); $("schedule").scrollIntoView({ behavior: "smooth" }); }); }
      tab.appendChild(tr);
    }
    host.appendChild(tab);
  }
  function renderFindings() {
    const host = $("findings-body"), F = DATA.findings || [];
    if (!F.length && !DATA.findings_maps.length) {
      host.appendChild(el("p", { class: "muted" }, "Not computed for this report (ppverify compare --findings --report FILE, or ppverify report --findings)."));
      return;
    }
    if (F.length) {
      const levels = [...new Set(F.flatMap((f) => f.verdicts.map((v) => v.level)))];
      const tab = el("table", { class: "cmp findings" }), head = el("tr");
      ["finding", ...levels].forEach((h) => head.appendChild(el("th", {}, h)));
      tab.appendChild(head);
      for (const f of F) {
        const tr = el("tr"), td = el("td");
        td.innerHTML = "<b>" + esc(f.key) + "</b> &mdash; ";
        td.appendChild(document.createTextNode(f.claim));
        tr.appendChild(td);
        for (const lv of levels) {
          const v = f.verdicts.find((x) => x.level === lv);
          const c = !v || v.reproduced === null ? el("td", { class: "na" }, "no data") :
            el("td", { class: v.reproduced ? "mark-yes" : "mark-no" }, v.reproduced ? "\u2713 holds" : "\u2717 not");
          if (v) c.title = v.evidence;
          tr.appendChild(c);
        }
        tab.appendChild(tr);
      }
      host.appendChild(tab);
    }
    for (const m of DATA.findings_maps) {
      const fig = el("figure");
      fig.appendChild(el("img", { class: "map", src: m.src, alt: "findings map " + m.name }));
      fig.appendChild(el("figcaption", { class: "muted" }, m.name));
      host.appendChild(fig);
    }
  }

  // ---------- start ----------
  function start() {
    const t0 = performance.now();
    const filt = $("cfg-filter");
    filt.appendChild(el("option", { value: "" }, "all configurations (" + configs.length + ")"));
    for (const c of configs) filt.appendChild(el("option", { value: c }, c));
    filt.addEventListener("change", renderTables);
    renderLegend();
    const pc = $("pt-config");
    for (const c of [...new Set(points.map((p) => p.config))]) pc.appendChild(el("option", { value: c }, c));
    pc.addEventListener("change", () => { fillSchedules(); selectPoint(pc.value, $("pt-schedule").value); });
    $("pt-schedule").addEventListener("change", () => selectPoint(pc.value, $("pt-schedule").value));
    $("pt-mem").addEventListener("change", () => { state.memLevel = $("pt-mem").value || null; redraw(); });
    installInteraction();
    renderVerification();
    renderFindings();
    if (points.length) {
      const first = points.find((p) => (p.verdict || {}).verdict === "INVALID") || points[0];
      selectPoint(first.config, first.schedule);
    } else {
      renderTables();
      $("gantt-wrap").textContent = "No schedule has a chart in this report.";
    }
    window.ppverifyReport.startMs = performance.now() - t0;
    window.ppverifyReport.ready = true;
  }

  window.ppverifyReport = {
    ready: false,
    /** Select a point (config optional: the first configuration holding the schedule). */
    select(schedule, config) {
      const p = points.find((q) => q.schedule === schedule && (!config || q.config === config));
      return p ? selectPoint(p.config, p.schedule) : false;
    },
    /** Labels of the ops drawn (full view) for a schedule at a level, one entry per drawn op. */
    opsDrawn(schedule, level, config) {
      if (!this.select(schedule, config)) return null;
      const pt = state.point, L = pt.levels[level];
      if (L && !state.levels.includes(level)) state.levels = state.levels.concat([level]);
      [state.t0, state.t1] = fullRange(); draw();
      return L && state.drawn[level] ? state.drawn[level].map((i) => pt.ops[L.o[i]]) : null;
    },
    levels() { return state.point ? Object.keys(state.point.levels) : []; },
    renderMs() { return state.renderMs; },
    /** The visible time range [t0, t1] of the charts. */
    view() { return [state.t0, state.t1]; },
    points() { return points.map((p) => [p.config, p.schedule]); },
    /** Labels of the ops drawn hatched (pipe 1) for a schedule at a level (full view). */
    hatched(schedule, level, config) {
      if (this.opsDrawn(schedule, level, config) === null) return null;
      const pt = state.point, L = pt.levels[level];
      return (state.hatched[level] || []).map((i) => pt.ops[L.o[i]]);
    },
    /** The memory panel's y-scale labels, bottom to top, for a level (its memory curves drawn). */
    memoryTicks(level) {
      if (!state.point || !state.point.levels[level]) return null;
      state.memLevel = level; $("pt-mem").value = level; draw();
      return state.memTicks.slice();
    },
    /** The memory panel's texts for a level (heading, peak, capacity line's label, device keys)
     *  and each device's drawn peak (weights + activations), as last drawn. */
    memoryLabels(level) {
      if (this.memoryTicks(level) === null) return null;
      return state.memText;
    },
    /** The hover text of transfer t at a level of the selected point (as the tooltip shows it). */
    transferTip(level, t) {
      const L = state.point && state.point.levels[level];
      if (!L || t < 0 || t >= L.tr.s.length) return null;
      const div = document.createElement("div");
      div.innerHTML = tipHtml({ L, i: t, type: "transfer", b: null });
      return div.innerText || div.textContent;
    },
    /** Indices of the transfers that queued behind another, at a level of the selected point. */
    queued(level) {
      const L = state.point && state.point.levels[level];
      return L ? L.tr.q.map((q, t) => (q >= 0 ? t : -1)).filter((t) => t >= 0) : null;
    },
    /** The colour a transfer kind is drawn in (collectives: their own). */
    transferColor(kind) { return trColor(kind); },
    /** A memory value as the tables write it (bytes in GiB, three significant digits). */
    memoryText(x, unit) { return fmtMem(x, unit); },
    /** A time as the charts write it (the axis, the hover; seconds in ms, slots counted). */
    timeText(x, unit) { return fmtTime(x, unit); },
  };
  start();
})();
