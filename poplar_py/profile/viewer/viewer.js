// The poplar-py profile viewer: plain JavaScript over the report embedded in this page.
"use strict";
(function () {
  const DATA = JSON.parse(document.getElementById("profile-data").textContent);
  const R = DATA.report;
  const COMP = R.compilation;
  const EX = R.execution;
  const TARGET = COMP.target;
  const NUM_TILES = TARGET.numTiles;
  const PER_IPU = TARGET.tilesPerIpu;
  const LIMIT = TARGET.bytesPerTile;
  const CLOCK = TARGET.clockFrequency;

  const MEMORY_COLORS = {
    "variables": "#4e79a7", "constants": "#9ecae9", "exchange buffers": "#f28e2b", "vertex state": "#59a14f",
    "vertex code": "#a6d96a", "control code": "#b07aa1", "gaps": "#d3d7dc",
  };
  const EXTRA_COLORS = ["#edc948", "#ff9da7", "#9c755f", "#76b7b2"];
  const PHASES = [
    {key: "sync", label: "Sync", color: "#a3acb9"},
    {key: "exchange", label: "On-IPU exchange", color: "#f28e2b"},
    {key: "globalExchange", label: "Global exchange", color: "#e15759"},
    {key: "host", label: "Host exchange", color: "#76b7b2"},
    {key: "streamingMemory", label: "Streaming Memory", color: "#9c755f"},
    {key: "compute", label: "Compute", color: "#4e79a7"},
  ];
  // every tile waits the same for these: the steps hold one number, not one per tile
  const TILE_PHASES = PHASES.filter(p => p.key !== "globalExchange" && p.key !== "streamingMemory");
  const STREAMING = COMP.memory.streamingMemory || {buffers: []};

  const state = {ipu: -1, selectedTile: null, selectedStep: null, logSteps: false, fitLimit: null};

  // ---- formatting and small DOM helpers ----------------------------------------------------------
  const fmt = n => Math.round(Number(n)).toLocaleString("en-US");
  const fmt1 = n => Number(n).toLocaleString("en-US", {minimumFractionDigits: 1, maximumFractionDigits: 1});
  const pct = (a, b) => (b ? 100 * a / b : 0).toFixed(1) + "%";
  function bytes(n) {
    if (Math.abs(n) < 1024) return fmt(n) + " B";
    if (Math.abs(n) < 1024 * 1024) return fmt1(n / 1024) + " KiB";
    if (Math.abs(n) < 1024 ** 3) return fmt1(n / 1024 / 1024) + " MiB";
    return fmt1(n / 1024 ** 3) + " GiB";
  }
  const micros = cycles => fmt1(cycles / CLOCK * 1e6) + " µs";
  function cyclesShort(n) {
    if (n >= 1e9) return fmt1(n / 1e9) + "G";
    if (n >= 1e6) return fmt1(n / 1e6) + "M";
    if (n >= 1e4) return fmt1(n / 1e3) + "k";
    return fmt(n);
  }
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "class") node.className = v;
      else if (k === "text") node.textContent = v;
      else if (k === "html") node.innerHTML = v;
      else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else if (k === "style") node.style.cssText = v;
      else node.setAttribute(k, v === true ? "" : v);
    }
    for (const c of children.flat()) {
      if (c !== null && c !== undefined && c !== false) node.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return node;
  }
  const esc = s => String(s).replace(/[&<>"]/g, c => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", "\"": "&quot;"})[c]);
  const swatch = color => `<i style="background:${color}"></i>`;
  function legend(container, items) {
    container.replaceChildren(...items.map(it => el("span", {},
      el("i", {class: it.line ? "line" : "", style: it.line ? "" : `background:${it.color}`}), it.label)));
  }
  function kvTable(rows) {
    return el("table", {class: "kv"}, el("tbody", {}, rows.map(([k, v, id]) =>
      el("tr", {}, el("td", {text: k}), el("td", {class: "num", id: id, text: v})))));
  }
  function barOf(parts, total, width) {
    const bar = el("div", {class: "bar", style: `width:${width}`});
    for (const p of parts) {
      if (p.value > 0 && total > 0) bar.append(el("i", {style: `width:${100 * p.value / total}%;background:${p.color}`}));
    }
    return bar;
  }

  // ---- tooltip ------------------------------------------------------------------------------------
  const tooltip = document.getElementById("tooltip");
  function showTip(event, html) {
    tooltip.innerHTML = html;
    tooltip.hidden = false;
    const pad = 14;
    const w = tooltip.offsetWidth, h = tooltip.offsetHeight;
    let x = event.clientX + pad, y = event.clientY + pad;
    if (x + w > window.innerWidth - 4) x = event.clientX - w - pad;
    if (y + h > window.innerHeight - 4) y = event.clientY - h - pad;
    tooltip.style.left = Math.max(4, x) + "px";
    tooltip.style.top = Math.max(4, y) + "px";
  }
  const hideTip = () => { tooltip.hidden = true; };
  function tipRows(title, rows) {
    return `<b>${esc(title)}</b><br>` + rows.map(([color, k, v]) =>
      `${color ? swatch(color) : ""}<span class="k">${esc(k)}:</span> ${esc(v)}`).join("<br>");
  }

  // ---- IPUs and tiles -----------------------------------------------------------------------------
  const ipuOf = tile => Math.floor(tile / PER_IPU);
  const ipuRange = () => state.ipu < 0 ? [0, NUM_TILES] : [state.ipu * PER_IPU, (state.ipu + 1) * PER_IPU];
  function expand(values) {
    if (Array.isArray(values)) return Float64Array.from(values);
    const out = new Float64Array(NUM_TILES);
    if (values && typeof values === "object") {
      const runs = values.runs;
      let at = 0;
      for (let i = 0; i < runs.length; i += 2) { out.fill(runs[i], at, at + runs[i + 1]); at += runs[i + 1]; }
    } else out.fill(Number(values) || 0);
    return out;
  }

  // ---- axes ---------------------------------------------------------------------------------------
  function niceStep(raw) {
    const mag = 10 ** Math.floor(Math.log10(raw));
    const norm = raw / mag;
    return (norm <= 1 ? 1 : norm <= 2 ? 2 : norm <= 2.5 ? 2.5 : norm <= 5 ? 5 : 10) * mag;
  }
  function ticks(max, count, integer) {
    if (!(max > 0)) return [0];
    const step = integer ? Math.max(1, Math.round(niceStep(max / count))) : niceStep(max / count);
    const out = [];
    let v = 0;
    for (; v < max * 0.9999; v += step) out.push(v);
    out.push(v);  // the first tick at or above max: the chart's top
    return out;
  }
  function byteUnit(max) {
    if (max >= 1024 * 1024 * 2) return {div: 1024 * 1024, name: "MiB"};
    if (max >= 2048) return {div: 1024, name: "KiB"};
    return {div: 1, name: "B"};
  }
  function setupCanvas(canvas, height) {
    const ratio = window.devicePixelRatio || 1;
    const width = canvas.parentElement.clientWidth;
    canvas.width = Math.round(width * ratio);
    canvas.height = Math.round(height * ratio);
    canvas.style.height = height + "px";
    const ctx = canvas.getContext("2d");
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.clearRect(0, 0, width, height);
    return {ctx, width, height};
  }
  const FONT = "12px system-ui, -apple-system, 'Segoe UI', Roboto, Arial, sans-serif";
  function drawAxes(ctx, box, yTicks, yFormat, yLabel, xTicks, xFormat, xLabel, xPos) {
    ctx.font = FONT;
    ctx.strokeStyle = "#e4e7eb";
    ctx.fillStyle = "#616e7c";
    ctx.lineWidth = 1;
    ctx.textAlign = "right";
    ctx.textBaseline = "middle";
    for (const v of yTicks) {
      const y = Math.round(box.y(v)) + 0.5;
      ctx.beginPath(); ctx.moveTo(box.left, y); ctx.lineTo(box.right, y); ctx.stroke();
      ctx.fillText(yFormat(v), box.left - 6, y);
    }
    ctx.textAlign = "center";
    ctx.textBaseline = "top";
    for (const v of xTicks) ctx.fillText(xFormat(v), xPos(v), box.bottom + 6);
    ctx.strokeStyle = "#9aa5b1";
    ctx.beginPath(); ctx.moveTo(box.left, box.bottom + 0.5); ctx.lineTo(box.right, box.bottom + 0.5); ctx.stroke();
    ctx.fillStyle = "#3e4c59";
    ctx.font = "600 " + FONT;
    ctx.fillText(xLabel, (box.left + box.right) / 2, box.bottom + 24);
    ctx.save();
    ctx.translate(14, (box.top + box.bottom) / 2);
    ctx.rotate(-Math.PI / 2);
    ctx.textBaseline = "middle";
    ctx.fillText(yLabel, 0, 0);
    ctx.restore();
  }

  // ---- a stacked bar chart over a range of tiles: zoom by dragging, hover, click -------------------
  class TileChart {
    constructor(container, opts) {
      this.opts = opts;
      this.canvas = el("canvas", {"aria-label": opts.label});
      this.brush = el("div", {class: "brush", hidden: true});
      container.replaceChildren(this.canvas, this.brush);
      this.range = ipuRange();
      this.drag = null;
      this.canvas.addEventListener("mousedown", e => { this.drag = {x: this.localX(e), moved: false}; });
      this.canvas.addEventListener("mousemove", e => this.onMove(e));
      this.canvas.addEventListener("mouseleave", () => { hideTip(); });
      window.addEventListener("mouseup", e => this.onUp(e));
    }
    localX(e) { return e.clientX - this.canvas.getBoundingClientRect().left; }
    setRange(lo, hi) {
      lo = Math.max(0, Math.min(NUM_TILES - 1, Math.floor(lo)));
      hi = Math.max(lo + 1, Math.min(NUM_TILES, Math.ceil(hi)));
      this.range = [lo, hi];
      this.draw();
      if (this.opts.onRange) this.opts.onRange(lo, hi);
    }
    tileAt(x) {
      const b = this.box;
      if (!b || x < b.left || x > b.right) return null;
      const [lo, hi] = this.range;
      return Math.min(hi - 1, lo + Math.floor((x - b.left) / (b.right - b.left) * (hi - lo)));
    }
    xOf(tile) {
      const [lo, hi] = this.range;
      return this.box.left + (tile - lo + 0.5) / (hi - lo) * (this.box.right - this.box.left);
    }
    onMove(e) {
      const x = this.localX(e);
      if (this.drag && (e.buttons & 1)) {
        if (Math.abs(x - this.drag.x) > 4) this.drag.moved = true;
        if (this.drag.moved) {
          const a = Math.max(this.box.left, Math.min(x, this.drag.x));
          const b = Math.min(this.box.right, Math.max(x, this.drag.x));
          Object.assign(this.brush.style, {left: a + "px", width: (b - a) + "px", height: this.box.bottom + "px"});
          this.brush.hidden = false;
          hideTip();
          return;
        }
      }
      const tile = this.tileAt(x);
      if (tile === null) { hideTip(); return; }
      showTip(e, this.opts.tooltip(tile));
    }
    onUp(e) {
      if (!this.drag) return;
      const drag = this.drag;
      this.drag = null;
      this.brush.hidden = true;
      const x = this.localX(e);
      if (drag.moved) {
        const a = this.tileAt(Math.max(this.box.left, Math.min(x, drag.x)));
        const b = this.tileAt(Math.min(this.box.right, Math.max(x, drag.x)));
        if (a !== null && b !== null) this.setRange(a, b + 1);
      } else if (e.target === this.canvas) {
        const tile = this.tileAt(x);
        if (tile !== null && this.opts.onClick) this.opts.onClick(tile);
      }
    }
    draw() {
      const {ctx, width, height} = setupCanvas(this.canvas, this.opts.height || 300);
      const [lo, hi] = this.range;
      const series = this.opts.series();
      const totals = new Float64Array(hi - lo);
      for (const s of series) for (let t = lo; t < hi; t++) totals[t - lo] += s.values[t];
      let max = 0;
      for (const v of totals) max = Math.max(max, v);
      const limit = this.opts.limit ? this.opts.limit() : null;
      if (limit) max = Math.max(max, limit);
      const unit = this.opts.unit(max || 1);
      const yTicks = ticks((max || 1) / unit.div, 5).map(v => v * unit.div);
      const top = Math.max(max, yTicks[yTicks.length - 1]) || 1;
      const box = {left: 70, right: width - 14, top: 12, bottom: height - 44};
      box.y = v => box.bottom - v / top * (box.bottom - box.top);
      this.box = box;
      const n = hi - lo;
      const xTicks = ticks(n - 1, Math.max(2, Math.floor((box.right - box.left) / 90)), true).map(v => v + lo)
        .filter(v => v < hi);
      drawAxes(ctx, box, yTicks, v => fmt1(v / unit.div).replace(/\.0$/, ""), this.opts.yLabel + (unit.name ? " (" + unit.name + ")" : ""),
        xTicks, v => fmt(v), this.opts.xLabel || "Tile", v => this.xOf(v));
      // one bar per pixel column at most: the column shows its largest tile
      const plot = box.right - box.left;
      const columns = Math.min(n, Math.floor(plot));
      const per = n / columns;
      const colWidth = plot / columns;
      const gap = colWidth > 6 ? Math.min(2, colWidth * 0.15) : 0;
      const marked = this.opts.marked ? this.opts.marked() : [];
      const over = new Set(marked);
      for (let c = 0; c < columns; c++) {
        const a = lo + Math.floor(c * per), b = Math.max(a + 1, lo + Math.floor((c + 1) * per));
        let best = a;
        for (let t = a; t < b; t++) if (totals[t - lo] > totals[best - lo]) best = t;
        let acc = 0;
        const x = box.left + c * colWidth;
        for (const s of series) {
          const v = s.values[best];
          if (!(v > 0)) continue;
          const y0 = box.y(acc), y1 = box.y(acc + v);
          ctx.fillStyle = s.color;
          ctx.fillRect(x + gap / 2, y1, Math.max(colWidth - gap, 1), Math.max(y0 - y1, 0.5));
          acc += v;
        }
        if (over.has(best)) {
          ctx.strokeStyle = "#d64545"; ctx.lineWidth = 1.5;
          ctx.strokeRect(x + gap / 2, box.y(acc), Math.max(colWidth - gap, 1), box.bottom - box.y(acc));
        }
      }
      ctx.fillStyle = "#d64545";
      for (const t of marked) {
        if (t < lo || t >= hi) continue;
        const x = this.xOf(t);
        ctx.beginPath(); ctx.moveTo(x, box.bottom + 1); ctx.lineTo(x - 4, box.bottom + 7); ctx.lineTo(x + 4, box.bottom + 7);
        ctx.fill();
      }
      if (limit) {
        const y = Math.round(box.y(limit)) + 0.5;
        ctx.strokeStyle = "#d64545"; ctx.setLineDash([6, 4]); ctx.lineWidth = 1.5;
        ctx.beginPath(); ctx.moveTo(box.left, y); ctx.lineTo(box.right, y); ctx.stroke();
        ctx.setLineDash([]);
        ctx.fillStyle = "#d64545"; ctx.textAlign = "right"; ctx.textBaseline = "bottom"; ctx.font = FONT;
        ctx.fillText("tile limit " + bytes(limit), box.right - 4, y - 3);
      }
      const sel = this.opts.selected ? this.opts.selected() : null;
      if (sel !== null && sel >= lo && sel < hi) {
        const x = this.xOf(sel);
        ctx.strokeStyle = "#1f2933"; ctx.lineWidth = 1; ctx.setLineDash([3, 3]);
        ctx.beginPath(); ctx.moveTo(x, box.top); ctx.lineTo(x, box.bottom); ctx.stroke();
        ctx.setLineDash([]);
        ctx.fillStyle = "#1f2933";
        ctx.beginPath(); ctx.moveTo(x, box.top + 6); ctx.lineTo(x - 5, box.top - 2); ctx.lineTo(x + 5, box.top - 2); ctx.fill();
      }
      Object.assign(this.canvas.dataset, {plotLeft: box.left, plotRight: box.right, plotTop: box.top,
        plotBottom: box.bottom, firstTile: lo, lastTile: hi - 1});
    }
  }

  // ---- summary ------------------------------------------------------------------------------------
  const tilesMemory = COMP.tiles.map(t => t.memory.total);
  const overTiles = COMP.tiles.filter(t => t.memory.outOfMemory).map(t => t.tile);
  function renderSummary() {
    const total = EX.totalCycles;
    let worst = 0;
    tilesMemory.forEach((v, i) => { if (v > tilesMemory[worst]) worst = i; });
    const g = COMP.graph;
    const cards = [
      ["total-cycles", "Total cycles", fmt(total), "≈ " + micros(total)],
      ["memory", "Memory used", bytes(COMP.memory.total),
        pct(COMP.memory.total, LIMIT * NUM_TILES) + " of " + bytes(LIMIT * NUM_TILES)],
      ["max-tile", "Largest tile", bytes(tilesMemory[worst] || 0),
        "tile " + worst + " · " + pct(tilesMemory[worst] || 0, LIMIT) + " of " + bytes(LIMIT)],
      ["over", "Tiles out of memory", fmt(overTiles.length), overTiles.length ? "marked in red below" : "all tiles fit"],
      ["device", "Device", `${TARGET.numIPUs} × ${TARGET.architecture.toUpperCase()}`,
        fmt(NUM_TILES) + " tiles · " + fmt1(CLOCK / 1e6) + " MHz"],
      ["vertices", "Vertices", fmt(g.numVertices), fmt(g.numComputeSets) + " compute sets · " + fmt(g.numVariables) + " variables"],
    ];
    document.getElementById("cards").replaceChildren(...cards.map(([id, label, value, sub]) =>
      el("div", {class: "card" + (id === "over" && overTiles.length ? " bad" : ""), id: "card-" + id},
        el("div", {class: "label", text: label}), el("div", {class: "value", text: value}),
        el("div", {class: "sub", text: sub}))));
    const avg = EX.tileAverages;
    const row = (label, key) => [label, `${fmt1(avg[key] || 0)} (${pct(avg[key] || 0, total)})`, "avg-" + key];
    const memRows = Object.entries(COMP.memory.byCategory).map(([k, v]) => [k[0].toUpperCase() + k.slice(1), fmt(v) + " B"]);
    const boxes = [
      ["Target", kvTable([
        ["Number of IPUs", fmt(TARGET.numIPUs)], ["Tiles per IPU", fmt(PER_IPU)], ["Total tiles", fmt(NUM_TILES)],
        ["Memory per tile", fmt1(LIMIT / 1024) + " kB"], ["Total memory", fmt1(LIMIT * NUM_TILES / 1024 / 1024) + " MB"],
        ["Clock speed (approx)", fmt1(CLOCK / 1e6) + " MHz"], ["Number of replicas", fmt(TARGET.numReplicas || 1)],
        ["IPUs per replica", fmt(TARGET.ipusPerReplica || TARGET.numIPUs)],
        ["Tiles per replica", fmt(TARGET.tilesPerReplica || NUM_TILES)]]),
      el("h3", {class: "second", text: "Graph"}), kvTable([["Vertices", fmt(g.numVertices), "graph-vertices"],
        ["Edges", fmt(g.numEdges)], ["Variables", fmt(g.numVariables)], ["Compute sets", fmt(g.numComputeSets)]])],
      ["Memory usage", kvTable([["Total, including gaps", fmt(COMP.memory.total) + " B", "memory-total"], ...memRows,
        ["Maximum", `${fmt(tilesMemory[worst] || 0)} B on tile ${worst}`],
        ["Tiles out of memory", fmt(overTiles.length)]])],
      ["Execution", kvTable([["Total cycles", fmt(total), "execution-total"], ["Time (approx)", micros(total)],
        row("Tile average compute (incl. idle threads)", "compute"),
        row("Tile average compute (excl. idle threads)", "computeActive"),
        row("Tile average IPU exchange", "exchange"), row("Tile average global exchange", "globalExchange"),
        row("Tile average host exchange", "host"),
        ...(STREAMING.buffers.length ? [row("Tile average Streaming Memory", "streamingMemory")] : []),
        row("Tile average sync", "sync"),
        // only reports whose IPUs waited at syncs for one another have it
        ...("waiting" in avg ? [row("Tile average waiting (for other IPUs)", "waiting")] : [])])],
    ];
    if (STREAMING.buffers.length) {
      boxes.push(["Streaming Memory (remote buffers)", kvTable([
        ["Total, every replica", bytes(STREAMING.total), "streaming-total"],
        ["Per replica", `${bytes(STREAMING.perReplica)} of ${bytes(STREAMING.capacity)}`],
        ...STREAMING.buffers.map(b => [b.handle, `${bytes(b.bytes)} (${fmt(b.repeats)} × ${fmt(b.numElements)} ${b.type})`])])]);
    }
    if ((EX.ipus || []).length > 1) {
      const memory = Object.fromEntries((COMP.ipus || []).map(i => [i.ipu, i.memory]));
      // older reports have one clock for every IPU: no end or waiting per IPU
      const clocks = EX.ipus.every(i => typeof i.cycles === "number");
      const t = el("table", {class: "data", id: "ipu-table"}, el("thead", {}, el("tr", {}, ["IPU", "Memory", "Compute",
        "Exchange", "Global exch.", "Sync", ...(clocks ? ["Waiting", "Ends at"] : [])].map((h, i) =>
        el("th", {class: i ? "num" : "", text: h})))),
      el("tbody", {}, EX.ipus.map(i => el("tr", {"data-ipu": i.ipu}, el("td", {text: "IPU " + i.ipu}),
        el("td", {class: "num", text: bytes(memory[i.ipu] || 0)}),
        ...["compute", "exchange", "globalExchange", "sync"].map(k => el("td", {class: "num", text: fmt1(i.tileAverages[k])})),
        ...(clocks ? [el("td", {class: "num", "data-key": "waiting", text: fmt(i.waiting || 0)}),
          el("td", {class: "num", "data-key": "cycles", text: fmt(i.cycles)})] : [])))));
      boxes.push(["Per IPU (tile averages, cycles)", t]);
    }
    document.getElementById("summary-tables").replaceChildren(...boxes.map(([title, ...body]) =>
      el("div", {class: title.startsWith("Per IPU") ? "wide" : ""}, el("h3", {text: title}), ...body)));
    document.getElementById("summary-text").textContent = DATA.summary || "";
  }

  // ---- memory per tile ----------------------------------------------------------------------------
  const categories = [];
  {
    const seen = new Set();
    for (const k of Object.keys(COMP.memory.byCategory)) seen.add(k);
    for (const t of COMP.tiles) for (const k of Object.keys(t.memory.byCategory)) seen.add(k);
    let extra = 0;
    for (const k of seen) {
      const values = new Float64Array(NUM_TILES);
      COMP.tiles.forEach((t, i) => { values[i] = t.memory.byCategory[k] || 0; });
      categories.push({key: k, label: k[0].toUpperCase() + k.slice(1), values,
        color: MEMORY_COLORS[k] || EXTRA_COLORS[extra++ % EXTRA_COLORS.length]});
    }
    const gaps = new Float64Array(NUM_TILES);
    COMP.tiles.forEach((t, i) => {
      let sum = 0;
      for (const c of categories) sum += c.values[i];
      gaps[i] = Math.max(0, t.memory.total - sum);
    });
    categories.push({key: "gaps", label: "Gaps (alignment)", values: gaps, color: MEMORY_COLORS.gaps});
  }
  let memoryChart = null;
  function renderMemory() {
    const maxUsed = Math.max(0, ...tilesMemory);
    if (state.fitLimit === null) state.fitLimit = maxUsed > LIMIT * 0.4;
    const lo = el("input", {type: "number", min: 0, max: NUM_TILES - 1, id: "memory-from"});
    const hi = el("input", {type: "number", min: 0, max: NUM_TILES - 1, id: "memory-to"});
    const apply = () => memoryChart.setRange(Number(lo.value), Number(hi.value) + 1);
    lo.addEventListener("change", apply);
    hi.addEventListener("change", apply);
    const limitBox = el("input", {type: "checkbox", id: "memory-fit-limit", checked: state.fitLimit});
    limitBox.addEventListener("change", () => { state.fitLimit = limitBox.checked; memoryChart.draw(); });
    const tileBox = el("input", {type: "number", min: 0, max: NUM_TILES - 1, id: "memory-tile", placeholder: "tile"});
    tileBox.addEventListener("change", () => selectTile(Number(tileBox.value)));
    document.getElementById("memory-toolbar").replaceChildren(
      el("label", {}, "Tiles ", lo, " to ", hi), el("button", {id: "memory-reset", onclick: () => {
        const [a, b] = ipuRange(); memoryChart.setRange(a, b);
      }}, "Reset zoom"),
      el("label", {}, limitBox, " Scale to the tile limit"), el("label", {}, "Show tile ", tileBox));
    legend(document.getElementById("memory-legend"), [...categories.filter(c => c.values.some(v => v > 0)),
      {label: "Tile limit (" + bytes(LIMIT) + ")", line: true}]);
    memoryChart = new TileChart(document.getElementById("memory-chart"), {
      label: "memory per tile", height: 320, yLabel: "Memory", unit: byteUnit,
      series: () => categories,
      limit: () => state.fitLimit ? LIMIT : null,
      marked: () => overTiles, selected: () => state.selectedTile,
      tooltip: tile => tipRows(`Tile ${tile}` + (TARGET.numIPUs > 1 ? ` (IPU ${ipuOf(tile)})` : ""),
        [[null, "Total", `${bytes(tilesMemory[tile])} (${pct(tilesMemory[tile], LIMIT)} of the tile)`],
          ...categories.filter(c => c.values[tile] > 0).map(c => [c.color, c.label, bytes(c.values[tile])])]),
      onClick: tile => selectTile(tile),
      onRange: (a, b) => { lo.value = a; hi.value = b - 1; },
    });
    lo.value = memoryChart.range[0];
    hi.value = memoryChart.range[1] - 1;
    memoryChart.draw();
    const over = document.getElementById("memory-over");
    if (overTiles.length) {
      over.className = "note bad";
      over.textContent = `${overTiles.length} tile(s) need more than the ${bytes(LIMIT)} a tile has: ` +
        overTiles.slice(0, 20).join(", ") + (overTiles.length > 20 ? ", …" : "");
    } else {
      over.className = "note";
      over.textContent = `Every tile fits in its ${bytes(LIMIT)}; the largest holds ${bytes(maxUsed)} ` +
        `(${pct(maxUsed, LIMIT)}).`;
    }
  }
  function selectTile(tile) {
    if (!(tile >= 0 && tile < NUM_TILES)) return;
    state.selectedTile = tile;
    memoryChart.draw();
    const t = COMP.tiles[tile].memory;
    const items = [];
    for (const [name, b] of Object.entries(t.variables || {})) items.push({name, kind: "variable", bytes: b});
    for (const [name, b] of Object.entries(t.constants || {})) items.push({name, kind: "constant", bytes: b});
    for (const kind of ["variables", "constants"]) {
      const o = t[kind + "Omitted"];
      if (o) items.push({name: `${fmt(o.count)} more ${kind}`, kind: kind.slice(0, -1), bytes: o.bytes});
    }
    for (const c of categories) {
      if (c.key === "variables" || c.key === "constants" || !(c.values[tile] > 0)) continue;
      items.push({name: c.label, kind: "category", bytes: c.values[tile], color: c.color});
    }
    items.sort((a, b) => b.bytes - a.bytes);
    const colorOf = it => it.color || (it.kind === "constant" ? MEMORY_COLORS.constants : MEMORY_COLORS.variables);
    const box = document.getElementById("tile-detail");
    box.dataset.tile = tile;
    box.hidden = false;
    box.replaceChildren(
      el("div", {class: "head"}, el("h3", {id: "tile-detail-title", text: `Tile ${tile}`}),
        TARGET.numIPUs > 1 ? el("span", {class: "pill", text: "IPU " + ipuOf(tile)}) : null,
        el("span", {id: "tile-detail-total", text: `${fmt(t.total)} B`}),
        el("span", {class: "pill" + (t.outOfMemory ? " bad" : ""),
          text: `${pct(t.total, LIMIT)} of ${bytes(LIMIT)}` + (t.outOfMemory ? " · out of memory" : "")}),
        el("button", {class: "close", onclick: () => { box.hidden = true; state.selectedTile = null; memoryChart.draw(); }},
          "Close")),
      el("table", {class: "data", id: "tile-items"},
        el("thead", {}, el("tr", {}, el("th", {text: "What"}), el("th", {text: "Kind"}),
          el("th", {class: "num", text: "Bytes"}), el("th", {class: "num", text: "Of tile"}), el("th", {text: ""}))),
        el("tbody", {}, items.map(it => el("tr", {"data-name": it.name, "data-bytes": it.bytes},
          el("td", {class: it.kind === "category" ? "" : "name", text: it.name}), el("td", {class: "type", text: it.kind}),
          el("td", {class: "num", text: fmt(it.bytes)}), el("td", {class: "num", text: pct(it.bytes, t.total)}),
          el("td", {style: "width:30%"}, barOf([{value: it.bytes, color: colorOf(it)}], items[0].bytes,
            Math.max(1, 100 * it.bytes / items[0].bytes) + "%")))))));
  }

  // ---- liveness -----------------------------------------------------------------------------------
  function renderLiveness() {
    const body = document.getElementById("liveness-body");
    const live = (COMP.memory || {}).liveness;
    if (!live || !Array.isArray(live.steps) || !live.steps.length) {
      body.replaceChildren(el("div", {class: "empty", id: "liveness-missing"},
        "Liveness is not in this report: it lists no always-live and not-always-live bytes per program step."));
      return;
    }
    const n = live.steps.length;
    const always = live.alwaysLive.map(Number), notAlways = live.notAlwaysLive.map(Number);
    const totalAt = i => always[i] + (notAlways[i] || 0);
    let argmax = 0;
    for (let i = 1; i < n; i++) if (totalAt(i) > totalAt(argmax)) argmax = i;
    const peakStep = Number.isInteger(live.peakStep) ? live.peakStep : argmax;
    if (typeof live.peak !== "number") live.peak = totalAt(argmax);
    body.replaceChildren(
      el("div", {class: "totals"}, el("span", {}, "Peak ", el("b", {id: "liveness-peak", text: bytes(live.peak)}),
        ` (${fmt(live.peak)} B) at step ${peakStep}: `, el("span", {class: "name", text: live.steps[peakStep] || ""})),
      el("span", {}, "Always live ", el("b", {text: bytes(Math.max(...always))})), el("span", {}, "Steps ", el("b", {text: fmt(n)}))),
      el("div", {class: "legend", id: "liveness-legend"}),
      el("div", {class: "chart", id: "liveness-chart"}, el("canvas", {"aria-label": "liveness"})));
    legend(document.getElementById("liveness-legend"), [{label: "Always live", color: "#4e79a7"},
      {label: "Not always live", color: "#f28e2b"}]);
    const canvas = body.querySelector("canvas");
    const draw = () => {
      const {ctx, width, height} = setupCanvas(canvas, 260);
      let max = live.peak || 0;
      for (let i = 0; i < n; i++) max = Math.max(max, always[i] + notAlways[i]);
      const unit = byteUnit(max || 1);
      const yTicks = ticks((max || 1) / unit.div, 5).map(v => v * unit.div);
      const top = Math.max(max, yTicks[yTicks.length - 1]) || 1;
      const box = {left: 70, right: width - 14, top: 14, bottom: height - 44};
      box.y = v => box.bottom - v / top * (box.bottom - box.top);
      const x = i => n === 1 ? (box.left + box.right) / 2 : box.left + i / (n - 1) * (box.right - box.left);
      drawAxes(ctx, box, yTicks, v => fmt1(v / unit.div).replace(/\.0$/, ""), "Live memory (" + unit.name + ")",
        ticks(n - 1, Math.max(2, Math.floor((box.right - box.left) / 90)), true).filter(v => v < n), v => fmt(v),
        "Program step", x);
      const area = (lower, upper, color) => {
        ctx.beginPath();
        for (let i = 0; i < n; i++) ctx.lineTo(x(i), box.y(upper(i)));
        for (let i = n - 1; i >= 0; i--) ctx.lineTo(x(i), box.y(lower(i)));
        ctx.closePath(); ctx.fillStyle = color; ctx.fill();
      };
      area(() => 0, i => always[i], "rgba(78,121,167,.85)");
      area(i => always[i], i => always[i] + notAlways[i], "rgba(242,142,43,.75)");
      const px = x(peakStep), py = box.y(live.peak);
      ctx.fillStyle = "#d64545"; ctx.beginPath(); ctx.arc(px, py, 4, 0, 2 * Math.PI); ctx.fill();
      ctx.font = "600 " + FONT; ctx.textBaseline = "bottom";
      ctx.textAlign = px > (box.left + box.right) / 2 ? "right" : "left";
      ctx.fillText("peak " + bytes(live.peak), px + (ctx.textAlign === "left" ? 6 : -6), Math.max(py - 4, box.top + 12));
      canvas.onmousemove = e => {
        const lx = e.clientX - canvas.getBoundingClientRect().left;
        const i = Math.round(n === 1 ? 0 : (lx - box.left) / (box.right - box.left) * (n - 1));
        if (i < 0 || i >= n) { hideTip(); return; }
        showTip(e, tipRows(`Step ${i}: ${live.steps[i]}`, [["#4e79a7", "Always live", bytes(always[i])],
          ["#f28e2b", "Not always live", bytes(notAlways[i])], [null, "Total", bytes(always[i] + notAlways[i])]]));
      };
      canvas.onmouseleave = hideTip;
    };
    draw();
    resizers.push(draw);
  }

  // ---- execution trace ----------------------------------------------------------------------------
  const steps = EX.steps;
  const phaseParts = s => PHASES.map(p => ({value: s[p.key] || 0, color: p.color, label: p.label}));
  function stepTip(i) {
    const s = steps[i];
    return tipRows(`Step ${i}: ${s.name}`, [[null, "Type", s.type], [null, "Runs", fmt(s.count)],
      [null, "Cycles per run", fmt(s.cycles)], ...PHASES.filter(p => s[p.key]).map(p => [p.color, p.label, fmt(s[p.key])]),
      [null, "All runs", `${fmt(s.cycles * s.count)} (${pct(s.cycles * s.count, EX.totalCycles)} of total)`]]);
  }
  function renderExecution() {
    const avg = EX.tileAverages;
    document.getElementById("execution-totals").replaceChildren(
      el("span", {}, "Total ", el("b", {id: "total-cycles", text: fmt(EX.totalCycles)}), " cycles (≈ " + micros(EX.totalCycles) + ")"),
      el("span", {}, "Steps ", el("b", {text: fmt(steps.length)})),
      el("span", {}, "Programs executed ", el("b", {text: [...new Set(EX.runs.map(r => r.program))].join(", ") || "none"})),
      el("span", {}, "Tile average compute ", el("b", {text: fmt1(avg.compute)})),
      el("span", {}, "exchange ", el("b", {text: fmt1(avg.exchange)})),
      el("span", {}, "sync ", el("b", {text: fmt1(avg.sync)})),
      ...("waiting" in avg ? [el("span", {}, "waiting ", el("b", {text: fmt1(avg.waiting)}))] : []));
    legend(document.getElementById("phase-legend"), PHASES);
    const timeline = document.getElementById("timeline");
    const grand = steps.reduce((a, s) => a + s.cycles * s.count, 0);
    timeline.replaceChildren(...steps.map((s, i) => {
      const seg = el("div", {class: "seg", "data-step": i, style: `flex:${Math.max(s.cycles * s.count, grand / 2000)} 0 0`});
      for (const p of phaseParts(s)) if (p.value > 0) seg.append(el("i", {style: `flex:${p.value} 0 0;background:${p.color}`}));
      seg.addEventListener("mousemove", e => showTip(e, stepTip(i)));
      seg.addEventListener("mouseleave", hideTip);
      seg.addEventListener("click", () => selectStep(i));
      return seg;
    }));
    const logBox = el("input", {type: "checkbox", id: "steps-log"});
    logBox.addEventListener("change", () => { state.logSteps = logBox.checked; renderStepRows(); });
    document.getElementById("steps-toolbar").replaceChildren(el("label", {}, logBox, " Logarithmic bar lengths"),
      el("span", {class: "note"}, "The bar at the top puts every step's runs end to end; each row below is one step, over all its runs."));
    renderStepRows();
    renderIpuTimeline();
  }
  function renderStepRows() {
    if (!steps.length) {
      document.getElementById("steps").replaceChildren(el("div", {class: "empty", text: "No steps ran: the report was written before the engine ran a program."}));
      return;
    }
    const max = Math.max(1, ...steps.map(s => s.cycles));
    const scale = v => state.logSteps ? Math.log10(1 + v) / Math.log10(1 + max) : v / max;
    const head = el("tr", {}, ["#", "Step", "Type", "Runs", "Cycles per run", "", "All runs"].map((h, i) =>
      el("th", {class: [0, 3, 4, 6].includes(i) ? "num" : "", text: h})));
    const rows = steps.map((s, i) => el("tr", {class: "step-row" + (i === state.selectedStep ? " selected" : ""),
      "data-step": i, onclick: () => selectStep(i), onmousemove: e => showTip(e, stepTip(i)), onmouseleave: hideTip},
    el("td", {class: "num", text: i}), el("td", {class: "name", text: s.name}), el("td", {class: "type", text: s.type}),
    el("td", {class: "num", text: fmt(s.count)}), el("td", {class: "num", text: fmt(s.cycles)}),
    el("td", {class: "barcell"}, barOf(phaseParts(s), s.cycles, Math.max(0.3, 100 * scale(s.cycles)) + "%")),
    el("td", {class: "num", text: fmt(s.cycles * s.count)})));
    document.getElementById("steps").replaceChildren(el("table", {class: "data", id: "steps-table"},
      el("thead", {}, head), el("tbody", {}, rows)));
  }
  let stepChart = null;
  function selectStep(i) {
    state.selectedStep = i;
    const s = steps[i];
    document.querySelectorAll("tr.step-row.selected, .timeline .seg.selected, #ipu-timeline .selected").forEach(n => n.classList.remove("selected"));
    document.querySelectorAll(`[data-step="${i}"]`).forEach(n => n.classList.add("selected"));
    const box = document.getElementById("step-detail");
    box.hidden = false;
    box.dataset.step = i;
    const figures = el("table", {class: "data", id: "step-figures"},
      el("thead", {}, el("tr", {}, ["Runs", "Cycles per run", ...PHASES.map(p => p.label), "All runs"].map(h =>
        el("th", {class: "num", text: h})))),
      el("tbody", {}, el("tr", {}, el("td", {class: "num", text: fmt(s.count)}),
        el("td", {class: "num", id: "step-cycles", text: fmt(s.cycles)}),
        ...PHASES.map(p => el("td", {class: "num", "data-phase": p.key, text: fmt(s[p.key] || 0)})),
        el("td", {class: "num", text: fmt(s.cycles * s.count)}))));
    const head = el("div", {class: "head"}, el("h3", {id: "step-detail-title", text: `Step ${i}: ${s.name}`}),
      el("span", {class: "pill", text: s.type}), s.computeSet ? el("span", {class: "pill", text: "compute set " + s.computeSet}) : null,
      el("button", {class: "close", onclick: () => { box.hidden = true; }}, "Close"));
    if (!s.tileCycles) {
      box.replaceChildren(head, figures, el("div", {class: "note", text: "Per-tile cycles are not in this report for this step."}));
      return;
    }
    const series = TILE_PHASES.map(p => ({...p, values: expand(s.tileCycles[p.key])}));
    const total = new Float64Array(NUM_TILES);
    for (const ser of series) for (let t = 0; t < NUM_TILES; t++) total[t] += ser.values[t];
    const [lo, hi] = ipuRange();
    let busiest = lo;
    for (let t = lo; t < hi; t++) if (total[t] > total[busiest]) busiest = t;
    const chart = el("div", {class: "chart", id: "step-chart"});
    const stats = el("div", {class: "totals", id: "step-tile-stats"});
    box.replaceChildren(head, figures, el("div", {class: "toolbar"},
      el("span", {class: "note", text: "Cycles of one run on every tile. Drag to zoom."}),
      el("button", {onclick: () => { const [a, b] = ipuRange(); stepChart.setRange(a, b); }}, "Reset zoom")),
    el("div", {class: "legend"}, TILE_PHASES.map(p => el("span", {}, el("i", {style: `background:${p.color}`}), p.label))),
    chart, stats);
    stats.append(el("span", {}, "Busiest tile ", el("b", {id: "step-busiest", text: busiest}),
      `: ${fmt(total[busiest])} cycles (compute ${fmt(series[3].values[busiest])})`));
    if (s.globalExchange) {
      stats.append(el("span", {}, "Global exchange ", el("b", {text: fmt(s.globalExchange)}), " cycles, every tile waiting"));
    }
    if (s.streamingMemory) {
      stats.append(el("span", {id: "step-streaming"}, "Streaming Memory ", el("b", {text: fmt(s.streamingMemory)}),
        " cycles, every tile waiting"));
    }
    stepChart = new TileChart(chart, {
      label: "cycles per tile", height: 240, yLabel: "Cycles", unit: () => ({div: 1, name: ""}),
      series: () => series, selected: () => null,
      tooltip: tile => tipRows(`Tile ${tile}` + (TARGET.numIPUs > 1 ? ` (IPU ${ipuOf(tile)})` : ""),
        [[null, "Total", fmt(total[tile])], ...series.map(p => [p.color, p.label, fmt(p.values[tile])])]),
    });
    stepChart.draw();
  }

  // ---- per-IPU timeline ---------------------------------------------------------------------------
  // One lane per IPU of a replica, each run of a leaf step drawn on its IPU's own clock. Runs are
  // plain divs written as one HTML string per lane, and mouse events are handled once on the grid,
  // not per run, so a few thousand runs draw in milliseconds.
  const TIMELINE = EX.timeline && Array.isArray(EX.timeline.entries) ? EX.timeline : null;
  const NUM_REPLICAS = Math.max(1, TARGET.numReplicas || 1);
  const IPUS_PER_REPLICA = TARGET.ipusPerReplica || Math.max(1, TARGET.numIPUs / NUM_REPLICAS);
  // above this many runs in view on a lane, runs narrower than a pixel share one div per pixel column
  const MERGE_ABOVE = 3000;
  const ipuTimeline = {replica: 0, range: null, lanes: null, render: () => {}};
  function stepBackground(s) {
    const parts = phaseParts(s).filter(p => p.value > 0);
    const sum = parts.reduce((a, p) => a + p.value, 0);
    if (!sum) return PHASES[0].color;
    if (parts.length === 1) return parts[0].color;
    let at = 0;
    const stops = parts.map(p => {
      const a = at;
      at += 100 * p.value / sum;
      return `${p.color} ${a.toFixed(2)}% ${at.toFixed(2)}%`;
    });
    return `linear-gradient(to right,${stops.join(",")})`;
  }
  function axisLabel(hi, step) {
    // enough decimals that neighbouring ticks differ when zoomed in far
    const unit = hi >= 1e9 ? [1e9, "G"] : hi >= 1e6 ? [1e6, "M"] : hi >= 1e4 ? [1e3, "k"] : [1, ""];
    const digits = Math.min(6, Math.max(0, Math.ceil(-Math.log10(step / unit[0]) - 1e-9)));
    return v => v === 0 ? "0" : (v / unit[0]).toLocaleString("en-US", {minimumFractionDigits: digits, maximumFractionDigits: digits}) + unit[1];
  }
  function renderIpuTimeline() {
    const box = document.getElementById("ipu-timeline");
    if (!TIMELINE) {
      box.replaceChildren(el("div", {class: "empty", id: "ipu-timeline-missing"},
        "The per-IPU timeline is not in this report: it was written before the profile replayed each IPU's clock."));
      return;
    }
    const entries = TIMELINE.entries;
    if (!entries.length && !TIMELINE.truncated) {
      // the report keeps no places for one IPU: its runs follow one another, as the bar above shows
      const ran = steps.some(s => s.count > 0);
      document.getElementById("ipu-timeline-hint").hidden = ran && TARGET.numIPUs === 1;
      box.replaceChildren(el("div", {class: "note", id: "ipu-timeline-missing"}, !ran ? "No steps ran: the timeline is empty." :
        TARGET.numIPUs === 1 ? "One IPU runs every step in turn: its timeline is the bar above (the report keeps no places " +
          "per run for one IPU)." : "The report keeps no runs of the per-IPU timeline."));
      return;
    }
    const backgrounds = steps.map(stepBackground);
    // per device IPU, its part of each run it is in: [entry, arrive, start, end]
    const lanes = Array.from({length: TARGET.numIPUs}, () => []);
    const runOf = new Int32Array(entries.length);
    const runs = new Int32Array(steps.length);
    let lastEnd = 0;
    entries.forEach((e, j) => {
      runOf[j] = ++runs[e.step];
      e.ipus.forEach((k, p) => {
        if (lanes[k]) lanes[k].push([j, e.arrive[p], e.start[p], e.end[p]]);
        lastEnd = Math.max(lastEnd, e.end[p]);
      });
    });
    ipuTimeline.lanes = lanes;
    const ipuRows = EX.ipus || [];
    const truncated = TIMELINE.truncated || 0;
    // the cycles to show: every IPU's clock, or only as far as the runs the report kept
    const clockEnd = Math.max(lastEnd, ...ipuRows.map(i => i.cycles || 0));
    const domain = Math.max(1, truncated ? lastEnd : clockEnd);
    ipuTimeline.range = [0, domain];

    const toolbar = el("div", {class: "toolbar"});
    if (NUM_REPLICAS > 1) {
      const select = el("select", {id: "timeline-replica"}, Array.from({length: NUM_REPLICAS}, (_, r) =>
        el("option", {value: r, text: `Replica ${r} (IPU${IPUS_PER_REPLICA > 1 ? "s" : ""} ${r * IPUS_PER_REPLICA}` +
          (IPUS_PER_REPLICA > 1 ? `–${(r + 1) * IPUS_PER_REPLICA - 1})` : ")")})));
      select.addEventListener("change", () => { ipuTimeline.replica = Number(select.value); draw(); });
      toolbar.append(el("label", {}, "Show ", select));
    }
    const span = el("span", {class: "note", id: "timeline-range"});
    toolbar.append(el("button", {id: "timeline-reset", onclick: () => { ipuTimeline.range = [0, domain]; draw(); }}, "Reset zoom"),
      span, el("span", {class: "legend"}, el("span", {}, el("i", {class: "wait-swatch"}), "Waiting for other IPUs")));
    const grid = el("div", {class: "tl-grid"});
    const brush = el("div", {class: "tl-brush", hidden: true});
    const notes = [];
    if (truncated) {
      notes.push(el("div", {class: "note", id: "timeline-truncated"}, `${fmt(truncated)} later run${truncated > 1 ? "s are" : " is"} ` +
        `not drawn: the report keeps the first ${fmt(entries.length)} runs only (to cycle ${fmt(lastEnd)}` +
        (clockEnd > lastEnd ? ` of ${fmt(clockEnd)})` : ")") + "."));
    }
    const merged = el("div", {class: "note", id: "timeline-merged", hidden: true});
    box.replaceChildren(toolbar, grid, merged, ...notes);

    function shown() {
      const r = Math.min(ipuTimeline.replica, NUM_REPLICAS - 1);
      return Array.from({length: IPUS_PER_REPLICA}, (_, i) => r * IPUS_PER_REPLICA + i).filter(k => k < lanes.length);
    }
    function draw() {
      const ipus = shown();
      const [lo, hi] = ipuTimeline.range;
      grid.style.gridTemplateRows = `repeat(${ipus.length}, 28px) 36px`;
      const laneOf = {};
      const children = [];
      for (const k of ipus) {
        const ipu = ipuRows[k] || {};
        children.push(el("div", {class: "lane-label" + (k === state.ipu ? " current" : ""), "data-ipu": k, text: "IPU " + k}));
        children.push(laneOf[k] = el("div", {class: "lane", "data-ipu": k, "data-runs": lanes[k].length}));
        children.push(el("div", {class: "lane-total", "data-ipu": k}, typeof ipu.cycles === "number" ? [
          "ends at ", el("b", {class: "lane-cycles", text: fmt(ipu.cycles)}),
          " · waited ", el("b", {class: "lane-waiting", text: fmt(ipu.waiting || 0)}),
          ` (${pct(ipu.waiting || 0, ipu.cycles)})`] : "—"));
      }
      const axis = el("div", {class: "tl-axis"});
      children.push(el("div"), axis, el("div"));
      brush.style.gridRow = `1 / span ${ipus.length}`;
      grid.replaceChildren(...children, brush);
      hot = null;
      // Whole pixels, from the laid-out width: runs that meet share an edge, with no gap or overlap
      // from rounding each on its own (redrawn on resize).
      const width = Math.max(50, ipus.length ? laneOf[ipus[0]].clientWidth : 50);
      const perPixel = (hi - lo) / width;
      const px = v => Math.round((v - lo) / perPixel);
      const step = niceStep((hi - lo) / Math.max(2, Math.floor(width / 110)));
      const tickValues = [];
      for (let v = Math.ceil(lo / step) * step; v <= hi; v += step) tickValues.push(v);
      const label = axisLabel(hi, step);
      const tickLines = tickValues.map(v => `<i class="tick" style="left:${px(v)}px"></i>`).join("");
      let mergedRuns = 0;
      for (const k of ipus) {
        const html = [tickLines];
        const items = lanes[k];
        let inView = 0;
        for (const it of items) if (it[3] >= lo && it[1] <= hi) inView++;
        const merge = inView > MERGE_ABOVE;
        // merging: the pixel column taken by narrow runs, where its div is in html, its longest run
        let column = -1, columnAt = -1, columnLength = 0, drawn = 0;
        for (const [j, arrive, start, end] of items) {
          if (end < lo || arrive > hi) continue;
          let from = start;
          if (start > arrive && start >= lo) {
            const a = px(Math.max(arrive, lo)), b = px(Math.min(start, hi));
            if (start - arrive >= perPixel) {
              html.push(`<div class="wait" data-entry="${j}" style="left:${a}px;width:${b - a}px"></div>`);
            } else from = arrive;  // a wait under a pixel: the run takes its pixel, so no gap shows
          }
          if (end < lo || start > hi) continue;
          const a = Math.min(px(Math.max(from, lo)), width - 1), b = Math.max(a + 1, px(Math.min(end, hi)));
          const s = entries[j].step;
          // a light edge parts back-to-back runs wide enough to show it
          const cls = "entry" + (b - a > 5 ? " edge" : "") + (s === state.selectedStep ? " selected" : "");
          const div = `<div class="${cls}" data-step="${s}" data-entry="${j}" ` +
            `style="left:${a}px;width:${b - a}px;background:${backgrounds[s]}"></div>`;
          if (merge && b - a === 1) {
            if (a === column) {  // the pixel shows its longest run, as the tile charts do
              mergedRuns++;
              if (end - start > columnLength) { html[columnAt] = div; columnLength = end - start; }
              continue;
            }
            column = a;
            columnAt = html.length;
            columnLength = end - start;
          }
          html.push(div);
          drawn++;
        }
        laneOf[k].innerHTML = html.join("");
        laneOf[k].dataset.drawn = drawn;
      }
      axis.innerHTML = tickValues.map(v => `<span style="left:${px(v)}px">${esc(label(v))}</span>`).join("") +
        "<em>Cycles, on each IPU's clock</em>";
      span.textContent = lo > 0 || hi < domain ? `Cycles ${fmt(lo)} to ${fmt(hi)} of ${fmt(domain)}` : `${fmt(entries.length)} runs`;
      merged.hidden = !mergedRuns;
      merged.textContent = mergedRuns ? `${fmt(mergedRuns)} runs narrower than a pixel are drawn as one per pixel: drag to zoom in.` : "";
      Object.assign(box.dataset, {replica: ipuTimeline.replica, from: lo, to: hi});
    }
    ipuTimeline.render = draw;

    // ---- hover, click and drag, once for the grid
    const plotX = e => {
      const lane = grid.querySelector(".lane");
      const r = lane.getBoundingClientRect();
      return {x: Math.max(0, Math.min(r.width, e.clientX - r.left)), width: r.width};
    };
    const cycleAt = p => ipuTimeline.range[0] + p.x / p.width * (ipuTimeline.range[1] - ipuTimeline.range[0]);
    let hot = null, drag = null, dragged = false;
    const setHot = j => {
      if (hot === j) return;
      grid.querySelectorAll(".entry.hot").forEach(n => n.classList.remove("hot"));
      hot = j;
      if (j !== null) grid.querySelectorAll(`.entry[data-entry="${j}"]`).forEach(n => n.classList.add("hot"));
    };
    function runTip(j, k, wait) {
      const e = entries[j], p = e.ipus.indexOf(k), s = steps[e.step];
      const waited = e.start[p] - e.arrive[p];
      const latest = Math.max(...e.arrive);
      const waitedFor = e.ipus.filter((_, q) => e.arrive[q] === latest && q !== p);
      const waitRow = waited > 0 ? [[null, "Waited", `${fmt(waited)} cycles (from ${fmt(e.arrive[p])})` +
        (waitedFor.length ? ` for IPU ${waitedFor.join(", ")}` : "")]] : [];
      if (wait) return tipRows(`IPU ${k} waiting`, [...waitRow, [null, "Before", `Step ${e.step}: ${s.name}`]]);
      return tipRows(`Step ${e.step}: ${s.name}`, [[null, "Type", s.type], [null, "Run", `${fmt(runOf[j])} of ${fmt(s.count)}`],
        [null, e.ipus.length > 1 ? "IPUs" : "IPU", e.ipus.join(", ")], [null, "On IPU " + k, `${fmt(e.start[p])} to ${fmt(e.end[p])}`],
        [null, "Cycles", fmt(e.end[p] - e.start[p])], ...waitRow]);
    }
    grid.addEventListener("mousemove", e => {
      if (drag) return;
      const target = e.target.closest(".entry, .wait");
      if (!target) { setHot(null); hideTip(); return; }
      const j = Number(target.dataset.entry), k = Number(target.parentElement.dataset.ipu);
      setHot(target.classList.contains("entry") ? j : null);
      showTip(e, runTip(j, k, target.classList.contains("wait")));
    });
    grid.addEventListener("mouseleave", () => { setHot(null); hideTip(); });
    grid.addEventListener("click", e => {
      const target = e.target.closest(".entry");
      if (target && !dragged) selectStep(Number(target.dataset.step));
      dragged = false;
    });
    grid.addEventListener("mousedown", e => {
      if (e.button !== 0 || !e.target.closest(".lane")) return;
      drag = {from: plotX(e), moved: false};
      dragged = false;
      e.preventDefault();  // no text selection while dragging
    });
    window.addEventListener("mousemove", e => {
      if (!drag || !(e.buttons & 1)) return;
      const p = plotX(e);
      if (Math.abs(p.x - drag.from.x) > 4) drag.moved = true;
      if (!drag.moved) return;
      hideTip();
      const a = Math.min(p.x, drag.from.x), b = Math.max(p.x, drag.from.x);
      Object.assign(brush.style, {left: a + "px", width: (b - a) + "px"});
      brush.hidden = false;
    });
    window.addEventListener("mouseup", e => {
      if (!drag) return;
      const d = drag;
      drag = null;
      brush.hidden = true;
      if (!d.moved) return;
      dragged = true;  // the click that follows is the drag's end, not a pick
      const a = cycleAt(d.from), b = cycleAt(plotX(e));
      const lo = Math.max(0, Math.min(a, b)), hi = Math.max(a, b);
      if (hi - lo >= 2) { ipuTimeline.range = [Math.floor(lo), Math.ceil(hi)]; draw(); }
    });
    draw();
    resizers.push(draw);  // the ticks and the merging follow the width
  }
  function showTimelineIpu(ipu) {
    // the header's IPU picker shows that IPU's replica and marks its lane
    if (!TIMELINE) return;
    if (ipu >= 0) {
      ipuTimeline.replica = Math.floor(ipu / IPUS_PER_REPLICA);
      const select = document.getElementById("timeline-replica");
      if (select) select.value = ipuTimeline.replica;
    }
    ipuTimeline.render();
  }

  // ---- tables -------------------------------------------------------------------------------------
  function sortableTable(id, columns, rows) {
    const table = el("table", {class: "data sortable", id});
    const body = el("tbody");
    let sortKey = null, dir = -1;
    const render = () => {
      const sorted = rows.slice();
      if (sortKey !== null) {
        const c = columns[sortKey];
        sorted.sort((a, b) => {
          const x = a[c.key], y = b[c.key];
          return (typeof x === "number" ? x - y : String(x).localeCompare(String(y))) * dir;
        });
      }
      body.replaceChildren(...sorted.map(r => el("tr", {"data-name": r.name}, columns.map(c =>
        el("td", {class: c.num ? "num" : c.cls || "", text: c.format ? c.format(r[c.key], r) : r[c.key]})))));
    };
    const heads = columns.map((c, i) => el("th", {class: c.num ? "num" : "", text: c.label, "data-key": c.key,
      title: "Sort by " + c.label.toLowerCase()}));
    heads.forEach((h, i) => h.addEventListener("click", () => {
      dir = sortKey === i ? -dir : (columns[i].num ? -1 : 1);
      sortKey = i;
      heads.forEach(x => x.classList.remove("asc", "desc"));
      h.classList.add(dir > 0 ? "asc" : "desc");
      render();
    }));
    table.append(el("thead", {}, el("tr", {}, heads)), body);
    render();
    return table;
  }
  function renderTables() {
    // reports written before the computeSets table: the OnTileExecute steps, by name
    const executedList = EX.computeSets || steps.filter(s => s.type === "OnTileExecute").map(s => ({
      name: s.name, runs: s.count, cycles: s.cycles * s.count, compute: s.compute * s.count,
      exchange: s.exchange * s.count, globalExchange: (s.globalExchange || 0) * s.count, sync: s.sync * s.count}));
    const executed = {};
    for (const c of executedList) {
      const row = executed[c.name] || (executed[c.name] = {runs: 0, cycles: 0, compute: 0, exchange: 0, globalExchange: 0, sync: 0});
      for (const k of Object.keys(row)) row[k] += c[k] || 0;
    }
    const names = [];
    for (const c of COMP.computeSets) if (!names.includes(c.name)) names.push(c.name);
    for (const c of executedList) if (!names.includes(c.name)) names.push(c.name);
    const verts = {};
    for (const c of COMP.computeSets) {
      const v = verts[c.name] || (verts[c.name] = {count: 0, types: []});
      for (const t of c.vertices) { v.count += t.count; if (!v.types.includes(t.type)) v.types.push(t.type); }
    }
    const total = EX.totalCycles;
    const csRows = names.map(name => {
      const e = executed[name] || {}, v = verts[name] || {count: 0, types: []};
      return {name, vertices: v.count, types: v.types.join(", "), runs: e.runs || 0, cycles: e.cycles || 0,
        share: total ? (e.cycles || 0) / total : 0, compute: e.compute || 0, exchange: (e.exchange || 0) + (e.globalExchange || 0),
        sync: e.sync || 0};
    });
    const csBox = document.getElementById("compute-sets");
    if (!csRows.length) csBox.replaceChildren(el("div", {class: "empty", text: "No compute sets."}));
    else {
      csBox.replaceChildren(sortableTable("compute-set-table", [
        {key: "name", label: "Compute set", cls: "name"}, {key: "vertices", label: "Vertices", num: true, format: fmt},
        {key: "types", label: "Vertex types", cls: "name"}, {key: "runs", label: "Runs", num: true, format: fmt},
        {key: "cycles", label: "Cycles", num: true, format: fmt},
        {key: "share", label: "Of total", num: true, format: v => (100 * v).toFixed(1) + "%"},
        {key: "compute", label: "Compute", num: true, format: fmt}, {key: "exchange", label: "Exchange", num: true, format: fmt},
        {key: "sync", label: "Sync", num: true, format: fmt}], csRows));
    }
    const vertexTotal = EX.vertexTypes.reduce((a, v) => a + v.cycles, 0);
    const vtRows = EX.vertexTypes.map(v => ({name: v.type, instances: v.instances, cycles: v.cycles,
      per: v.instances ? v.cycles / v.instances : 0, share: vertexTotal ? v.cycles / vertexTotal : 0}));
    const vtBox = document.getElementById("vertex-types");
    if (!vtRows.length) vtBox.replaceChildren(el("div", {class: "empty", text: "No vertices ran."}));
    else {
      vtBox.replaceChildren(sortableTable("vertex-type-table", [
        {key: "name", label: "Vertex type", cls: "name"}, {key: "instances", label: "Instances", num: true, format: fmt},
        {key: "cycles", label: "Cycles", num: true, format: fmt},
        {key: "per", label: "Cycles per instance", num: true, format: fmt1},
        {key: "share", label: "Of vertex cycles", num: true, format: v => (100 * v).toFixed(1) + "%"}], vtRows));
    }
  }

  // ---- IPU selector, resizing, start --------------------------------------------------------------
  const resizers = [];
  function setupIpus() {
    if (TARGET.numIPUs < 2) return;
    const select = document.getElementById("ipu-select");
    select.replaceChildren(el("option", {value: -1, text: `All ${TARGET.numIPUs} IPUs`}),
      ...Array.from({length: TARGET.numIPUs}, (_, k) => el("option", {value: k, text: `IPU ${k} (tiles ${k * PER_IPU}–${(k + 1) * PER_IPU - 1})`})));
    select.addEventListener("change", () => {
      state.ipu = Number(select.value);
      const [a, b] = ipuRange();
      memoryChart.setRange(a, b);
      if (state.selectedStep !== null) selectStep(state.selectedStep);
      showTimelineIpu(state.ipu);
    });
    document.getElementById("ipu-picker").hidden = false;
  }
  document.getElementById("source").textContent = DATA.title || "";
  if (DATA.title) document.title = DATA.title + " · poplar-py profile";
  renderSummary();
  renderMemory();
  renderLiveness();
  renderExecution();
  renderTables();
  setupIpus();
  let pending = null;
  window.addEventListener("resize", () => {
    clearTimeout(pending);
    pending = setTimeout(() => {
      memoryChart.draw();
      if (stepChart && !document.getElementById("step-detail").hidden) stepChart.draw();
      resizers.forEach(f => f());
    }, 100);
  });
  window.poplarViewer = {state, selectTile, selectStep, ipuTimeline};
})();
