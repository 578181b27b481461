// The report page's one inline script and style sheet: the heat map drawn on a
// canvas per value from the JSON data block (id "heat-data"), the statistic
// selector and the hover read-out. No network, no external scripts or fonts.
#pragma once

namespace fleetsim::report {

inline constexpr const char* kPageStyle = R"CSS(
body{font:14px/1.4 sans-serif;color:#222;background:#fff;margin:16px 24px;max-width:1000px}
h1{font-size:20px;margin:0 0 4px} h2{font-size:16px;margin:24px 0 6px;border-bottom:1px solid #ccc}
.sub{color:#555;margin:0 0 8px} table{border-collapse:collapse;font-size:13px}
td,th{border:1px solid #ccc;padding:2px 6px;text-align:left;vertical-align:top}
th{background:#f3f3f3} dl{display:grid;grid-template-columns:max-content auto;gap:2px 12px;margin:0}
dt{font-weight:bold} dd{margin:0} pre{background:#f6f6f6;padding:8px;white-space:pre-wrap;font-size:12px}
.note{color:#555;font-size:12px} .tip{font-size:12px;min-height:2.8em;color:#333} h3{font-size:14px;margin:12px 0 4px}
.legend{display:inline-block;width:200px;height:10px;vertical-align:middle;
background:linear-gradient(to right,rgb(68,1,84),rgb(59,82,139),rgb(33,145,140),rgb(94,201,98),rgb(253,231,37))}
.odd{background:#fff3e0} ol.walk li{margin-bottom:6px} ol.walk ul{margin:2px 0;padding-left:18px}
)CSS";

inline constexpr const char* kPageScript = R"JS(
(function () {
  'use strict';
  const D = JSON.parse(document.getElementById('heat-data').textContent);
  const A = D.alphabet, top = 8, nc = D.cols.length, nr = D.rows.length, ch = D.cellh;
  const stops = [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]];
  const statSel = document.getElementById('stat');
  function level(c) { const i = A.indexOf(c); return i < 0 ? -1 : i / (A.length - 1); }
  function color(v) {
    const x = v * (stops.length - 1), i = Math.min(Math.floor(x), stops.length - 2), f = x - i;
    const a = stops[i], b = stops[i + 1], m = (k) => Math.round(a[k] + (b[k] - a[k]) * f);
    return 'rgb(' + m(0) + ',' + m(1) + ',' + m(2) + ')';
  }
  function colOf(t) {
    for (let c = 0; c < nc; ++c) if (D.cols[c] >= t) return c;
    return nc;
  }
  function fmt(t) { return t >= 3600 ? (t / 3600).toFixed(2) + ' h' : t.toFixed(0) + ' s'; }
  function pct(m, i) { const v = level(m[i]); return v < 0 ? '-' : Math.round(v * 100) + '%'; }
  function labels(ctx, cw) {
    ctx.font = '11px sans-serif';
    ctx.textAlign = 'right';
    ctx.textBaseline = 'middle';
    let lastY = -100;
    for (let r = 0; r < nr; ++r) {
      const y = top + r * ch + ch / 2;
      if (y - lastY < 12) continue;
      ctx.fillStyle = D.rows[r].w ? '#b00' : '#222';
      ctx.fillText(D.rows[r].l, D.left - 4, y);
      lastY = y;
    }
    const bottom = top + nr * ch;
    ctx.textAlign = 'center';
    ctx.textBaseline = 'top';
    ctx.fillStyle = '#222';
    for (let k = 0; k <= 4; ++k) {
      const c = Math.min(nc - 1, Math.round(k * (nc - 1) / 4));
      ctx.fillText(fmt(D.cols[c]), Math.min(D.left + (c + 0.5) * cw, ctx.canvas.width - 20), bottom + 4);
    }
    for (const mk of D.marks) {
      const x = D.left + colOf(mk.t) * cw;
      ctx.strokeStyle = mk.color;
      ctx.lineWidth = 2;
      ctx.beginPath();
      ctx.moveTo(x, top);
      ctx.lineTo(x, bottom);
      ctx.stroke();
      ctx.fillStyle = mk.color;
      ctx.fillText(mk.label, Math.min(x, ctx.canvas.width - 80), bottom + 18 + 12 * mk.row);
    }
  }
  function draw(cv) {
    const ctx = cv.getContext('2d'), cw = (cv.width - D.left - 12) / nc;
    const m = D.layers[cv.dataset.layer][statSel.value];
    ctx.fillStyle = '#fff';
    ctx.fillRect(0, 0, cv.width, cv.height);
    for (let r = 0; r < nr; ++r)
      for (let c = 0; c < nc; ++c) {
        const v = level(m[r * nc + c]);
        ctx.fillStyle = v < 0 ? '#e8e8e8' : color(v);
        const x0 = Math.floor(D.left + c * cw), x1 = Math.floor(D.left + (c + 1) * cw);
        ctx.fillRect(x0, top + r * ch, x1 - x0, ch);
      }
    labels(ctx, cw);
  }
  function hover(cv, e) {
    const tip = document.getElementById(cv.id + '-tip'), b = cv.getBoundingClientRect();
    const cw = (cv.width - D.left - 12) / nc;
    const c = Math.floor((e.clientX - b.left - D.left) / cw), r = Math.floor((e.clientY - b.top - top) / ch);
    if (c < 0 || c >= nc || r < 0 || r >= nr) { tip.textContent = ''; return; }
    const L = D.layers[cv.dataset.layer], i = r * nc + c, row = D.rows[r];
    const from = c > 0 ? D.cols[c - 1] : D.t0;
    tip.textContent = row.l + (row.w ? ' (' + row.w + ')' : '') + ', ' + row.n + ' rank(s) sampled; ' +
        fmt(from) + ' to ' + fmt(D.cols[c]) + ': ' + L.name + ' min ' + pct(L.min, i) + ', mean ' +
        pct(L.mean, i) + ', max ' + pct(L.max, i);
  }
  const canvases = Array.from(document.querySelectorAll('canvas.heat'));
  for (const cv of canvases) {
    cv.addEventListener('mousemove', (e) => hover(cv, e));
    draw(cv);
  }
  statSel.addEventListener('change', () => canvases.forEach(draw));
})();
)JS";

}  // namespace fleetsim::report
