// The trend chart: median per run with its 95% CI band, change points as dashed red lines, and
// a pull request's head as a dashed orange line when one is chosen. Hover shows the run's commit
// and values; a click opens the run. Drawn with the vendored uPlot. The value axis's ticks and
// labels come from the server (round 1-2-5 steps in the displayed unit, see ticks.py).
// What was drawn is counted into data-* attributes of #trend-chart and window.perfgateTrend,
// so a test (or a curious person) can check the chart without reading pixels.
"use strict";
(function () {
  const data = JSON.parse(document.getElementById("trend-data").textContent);
  const el = document.getElementById("trend-chart");
  const tip = document.getElementById("trend-tooltip");
  const pts = data.points;
  const cps = data.change_points;
  const BLUE = "#08519c";
  const RED = "#d62728";
  const BAND = "rgba(158, 202, 225, 0.55)";
  const ORANGE = "#e8590c";
  const overlay = data.overlay;
  const yAxis = data.y_axis;

  const xs = pts.map((_, i) => i);
  const median = pts.map((p) => p.median);
  const high = pts.map((p) => (p.ci ? p.ci[1] : p.median));
  const low = pts.map((p) => (p.ci ? p.ci[0] : p.median));

  // A history of a few days is labelled by hour, a longer one by day.
  const span = pts.length > 1 ? Date.parse(pts[pts.length - 1].time) - Date.parse(pts[0].time) : 0;
  const hourly = span < 3 * 24 * 3600 * 1000;
  function tickLabel(p) {
    return hourly ? p.date.slice(5, 16) : p.date.slice(0, 10);
  }

  // Only the median gets a hover marker; the band's edges are not points of their own.
  function cursorPoint(u, si) {
    if (si !== 3) return null;
    const pt = document.createElement("div");
    pt.style.width = pt.style.height = "12px";
    pt.style.marginLeft = pt.style.marginTop = "-6px";
    return pt;
  }

  function inside(u, x, y) {
    const b = u.bbox;
    return x >= b.left - 0.5 && x <= b.left + b.width + 0.5 && y >= b.top - 0.5 && y <= b.top + b.height + 0.5;
  }

  function drawChangePoints(u) {
    const ctx = u.ctx;
    const { top, height } = u.bbox;
    let drawnMarks = 0;
    ctx.save();
    ctx.strokeStyle = RED;
    ctx.lineWidth = 2 * uPlot.pxRatio;
    ctx.setLineDash([6 * uPlot.pxRatio, 4 * uPlot.pxRatio]);
    for (const i of cps) {
      if (i < u.scales.x.min || i > u.scales.x.max) continue;
      const x = Math.round(u.valToPos(i, "x", true));
      ctx.beginPath();
      ctx.moveTo(x, top);
      ctx.lineTo(x, top + height);
      ctx.stroke();
      drawnMarks += 1;
    }
    ctx.restore();
    let drawnPoints = 0;
    for (let i = 0; i < pts.length; i++) {
      const x = u.valToPos(i, "x", true);
      const y = u.valToPos(median[i], "y", true);
      if (inside(u, x, y)) drawnPoints += 1;
    }
    el.dataset.drawnPoints = String(drawnPoints);
    el.dataset.drawnChangePoints = String(drawnMarks);
    el.dataset.rendered = "true";
  }

  function showTooltip(u) {
    const i = u.cursor.idx;
    if (i == null || u.cursor.left < 0) {
      tip.hidden = true;
      return;
    }
    const p = pts[i];
    const rows = [
      ["commit", p.commit.slice(0, 10)],
      ["time", p.date + " UTC"],
      ["median", p.median_text],
      ["95% CI", p.ci_text || "—"],
      ["samples", String(p.n)],
    ];
    if (overlay) rows.push([overlay.label, overlay.median_text]);
    tip.replaceChildren();
    for (const [name, value] of rows) {
      const line = document.createElement("div");
      const label = document.createElement("span");
      label.textContent = `${name}: `;
      const strong = document.createElement("strong");
      strong.textContent = value;
      line.append(label, strong);
      tip.append(line);
    }
    if (p.change) {
      const line = document.createElement("div");
      line.className = "change";
      line.textContent = `change point ${p.change.text}`;
      tip.append(line);
    }
    tip.dataset.run = p.run;
    tip.hidden = false;
    const rect = u.over.getBoundingClientRect();
    const left = window.scrollX + rect.left + u.cursor.left;
    const overflow = left + 16 + tip.offsetWidth > window.scrollX + document.documentElement.clientWidth;
    tip.style.left = `${overflow ? left - tip.offsetWidth - 16 : left + 16}px`;
    tip.style.top = `${window.scrollY + rect.top + u.cursor.top + 16}px`;
  }

  const opts = {
    width: Math.max(el.clientWidth, 300),
    height: 380,
    legend: { show: false },
    scales: { x: { time: false }, y: { range: () => [yAxis.min, yAxis.max] } },
    cursor: { points: { show: cursorPoint, fill: BLUE } },
    // The band's series come first so the median line and its points are drawn over the band.
    series: [
      {},
      { label: "CI high", stroke: "transparent", points: { show: false } },
      { label: "CI low", stroke: "transparent", points: { show: false } },
      { label: "median", stroke: BLUE, width: 1.5, points: { show: true, size: 7, fill: BLUE, stroke: BLUE } },
      ...(overlay ? [{ label: overlay.label, stroke: ORANGE, width: 2, dash: [8, 5], points: { show: false } }] : []),
    ],
    bands: [{ series: [1, 2], fill: BAND }],
    axes: [
      {
        space: hourly ? 100 : 80,
        incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000],
        values: (u, splits) => splits.map((v) => (Number.isInteger(v) && pts[v] ? tickLabel(pts[v]) : "")),
      },
      { size: 80, splits: () => yAxis.ticks, values: () => yAxis.labels },
    ],
    hooks: { draw: [drawChangePoints], setCursor: [showTooltip] },
  };

  const series = [xs, high, low, median];
  if (overlay) series.push(pts.map(() => overlay.median));
  const chart = new uPlot(opts, series, el);
  el.dataset.overlay = overlay ? overlay.run : "";
  window.perfgateTrend = { chart, data };

  // A click on a point opens its run; a drag (zoom) is not a click.
  let downX = null;
  chart.over.addEventListener("mousedown", (e) => { downX = e.clientX; });
  chart.over.addEventListener("click", (e) => {
    const i = chart.cursor.idx;
    if (i == null || (downX !== null && Math.abs(e.clientX - downX) > 3)) return;
    window.location.assign(pts[i].url);
  });
  chart.over.addEventListener("mouseleave", () => { tip.hidden = true; });
  window.addEventListener("resize", () => {
    chart.setSize({ width: Math.max(el.clientWidth, 300), height: 380 });
  });
})();
