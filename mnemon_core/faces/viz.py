"""`mnemon viz` (reference §1.2): the graph as Graphviz DOT, or as one self-contained HTML page.

DOT: `digraph mnemon {`, `rankdir=LR`, one box per active insight labelled `<id8>: [category] <content>`
(content cut to 60 bytes + "..."), node colour by category, edge colour by type, edge label = the `sub_type`
metadata or the edge type, only edges between active insights.

HTML: no CDN and no network (the machine that opens it may be offline): the data is embedded as JSON and a
small force layout drawn on a <canvas> by inline JavaScript, with a legend of categories and edge types, pan
and zoom (wheel, drag), node dragging and a tooltip with the full text.
"""

from __future__ import annotations

import html
import json
from typing import TYPE_CHECKING, Any

from ..errors import ValidationError
from ..models import Category, Edge, EdgeType, Insight

if TYPE_CHECKING:
    from ..memory import Memory

__all__ = ["CATEGORY_COLORS", "EDGE_COLORS", "FORMATS", "render", "render_dot", "render_html"]

FORMATS = ("dot", "html")
LABEL_BYTES = 60  # content shown in a node label, in bytes, before "..."
# The original's palette; supersedes (added later upstream) gets its own colour too.
CATEGORY_COLORS: dict[str, str] = {
    Category.decision: "#e74c3c",
    Category.fact: "#3498db",
    Category.insight: "#9b59b6",
    Category.preference: "#2ecc71",
    Category.context: "#f39c12",
    Category.general: "#95a5a6",
}
EDGE_COLORS: dict[str, str] = {
    EdgeType.temporal: "#aaaaaa",
    EdgeType.semantic: "#3498db",
    EdgeType.causal: "#e74c3c",
    EdgeType.entity: "#2ecc71",
    EdgeType.supersedes: "#e67e22",
}
OTHER_COLOR = "#cccccc"


def render(memory: Memory, format: str) -> str:
    """The active graph of `memory` as DOT or HTML text."""
    fmt = (format or "").strip().lower()
    if fmt not in FORMATS:
        raise ValidationError(f"unsupported format: {format} (use dot or html)", field="format")
    store = memory.store
    nodes = list(store.iter_active())
    active = {n.id for n in nodes}
    edges = [e for e in store.iter_edges() if e.source_id in active and e.target_id in active]
    return render_dot(nodes, edges) if fmt == "dot" else render_html(nodes, edges)


def _cut(text: str, limit: int = LABEL_BYTES) -> str:
    """At most `limit` UTF-8 bytes (never half a character), "..." when cut; one line."""
    flat = " ".join(text.split("\n")).replace("\r", " ").replace("\t", " ")
    raw = flat.encode("utf-8")
    if len(raw) <= limit:
        return flat
    return raw[:limit].decode("utf-8", "ignore") + "..."


def node_label(ins: Insight) -> str:
    return f"{ins.id[:8]}: [{ins.category}] {_cut(ins.content)}"


def edge_label(edge: Edge) -> str:
    return edge.metadata.get("sub_type") or str(edge.edge_type)


def _dot(s: str) -> str:
    """A DOT double-quoted string."""
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ").replace("\r", " ") + '"'


def render_dot(nodes: list[Insight], edges: list[Edge]) -> str:
    out = [
        "digraph mnemon {",
        "  rankdir=LR;",
        '  node [shape=box, style="filled,rounded", fontsize=10, fontname="Helvetica"];',
        '  edge [fontsize=8, fontname="Helvetica"];',
        "",
    ]
    for n in nodes:
        color = CATEGORY_COLORS.get(n.category, CATEGORY_COLORS[Category.general])
        out.append(f'  {_dot(n.id)} [label={_dot(node_label(n))}, fillcolor="{color}", fontcolor="white"];')
    out.append("")
    for e in edges:
        color = EDGE_COLORS.get(e.edge_type, OTHER_COLOR)
        out.append(f'  {_dot(e.source_id)} -> {_dot(e.target_id)} [label={_dot(edge_label(e))}, '
                   f'color="{color}", fontcolor="{color}"];')
    out.append("}")
    return "\n".join(out) + "\n"


def _script_json(data: Any) -> str:
    """JSON safe inside <script>: no `</script>`, `<!--` or `&` can end or confuse the element."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def render_html(nodes: list[Insight], edges: list[Edge]) -> str:
    index = {n.id: i for i, n in enumerate(nodes)}
    data = {
        "nodes": [
            {"id": n.id, "label": node_label(n), "text": n.content, "category": str(n.category),
             "importance": n.importance}
            for n in nodes
        ],
        "edges": [
            {"s": index[e.source_id], "t": index[e.target_id], "type": str(e.edge_type), "label": edge_label(e),
             "w": e.weight}
            for e in edges
        ],
        "categoryColors": {str(k): v for k, v in CATEGORY_COLORS.items()},
        "edgeColors": {str(k): v for k, v in EDGE_COLORS.items()},
    }
    cat_counts = {c: 0 for c in CATEGORY_COLORS}
    for n in nodes:
        cat_counts[n.category] = cat_counts.get(n.category, 0) + 1
    type_counts = {t: 0 for t in EDGE_COLORS}
    for e in edges:
        type_counts[e.edge_type] = type_counts.get(e.edge_type, 0) + 1
    legend = ["<b>Categories</b>"]
    for c, color in CATEGORY_COLORS.items():
        legend.append(f'<div class="row"><span class="dot" style="background:{color}"></span>'
                      f"{html.escape(str(c))} <i>{cat_counts.get(c, 0)}</i></div>")
    legend.append("<b>Edges</b>")
    for t, color in EDGE_COLORS.items():
        legend.append(f'<div class="row"><span class="line" style="background:{color}"></span>'
                      f"{html.escape(str(t))} <i>{type_counts.get(t, 0)}</i></div>")
    title = f"mnemon — {len(nodes)} insights, {len(edges)} edges"
    return (
        _PAGE.replace("__TITLE__", html.escape(title))
        .replace("__LEGEND__", "\n".join(legend))
        .replace("__DATA__", _script_json(data))
    )


_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>__TITLE__</title>
<style>
  html, body { margin: 0; height: 100%; overflow: hidden; background: #1a1a2e; color: #eee;
    font: 13px system-ui, -apple-system, "Segoe UI", sans-serif; }
  canvas { display: block; width: 100vw; height: 100vh; cursor: grab; }
  canvas.dragging { cursor: grabbing; }
  #title { position: fixed; top: 10px; left: 12px; opacity: .8; pointer-events: none; }
  #legend { position: fixed; top: 10px; right: 10px; background: rgba(0,0,0,.65); padding: 10px 12px;
    border-radius: 8px; line-height: 1.5; }
  #legend b { display: block; margin-top: 4px; }
  #legend i { opacity: .6; font-style: normal; margin-left: 4px; }
  .row { display: flex; align-items: center; }
  .dot { width: 11px; height: 11px; border-radius: 50%; margin-right: 7px; display: inline-block; }
  .line { width: 18px; height: 3px; margin-right: 7px; display: inline-block; }
  #tip { position: fixed; max-width: 420px; background: rgba(10,10,20,.92); border: 1px solid #444;
    padding: 6px 8px; border-radius: 6px; pointer-events: none; display: none; white-space: pre-wrap; }
  #help { position: fixed; bottom: 8px; left: 12px; opacity: .5; pointer-events: none; }
</style>
</head>
<body>
<canvas id="graph"></canvas>
<div id="title">__TITLE__</div>
<div id="legend">
__LEGEND__
</div>
<div id="tip"></div>
<div id="help">wheel: zoom · drag: pan or move a node · hover: full text</div>
<script id="mnemon-data" type="application/json">__DATA__</script>
<script>
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("mnemon-data").textContent);
  var nodes = data.nodes, edges = data.edges, n = nodes.length;
  var canvas = document.getElementById("graph"), ctx = canvas.getContext("2d"), tip = document.getElementById("tip");
  var LINK = 60, GOLDEN = Math.PI * (3 - Math.sqrt(5));
  var degree = new Array(n).fill(0);
  edges.forEach(function (e) { degree[e.s]++; degree[e.t]++; });
  // Deterministic start: a sunflower spiral (no randomness, so every render of one store looks the same).
  nodes.forEach(function (d, i) {
    var r = LINK * 0.6 * Math.sqrt(i + 0.5), a = i * GOLDEN;
    d.x = r * Math.cos(a); d.y = r * Math.sin(a); d.vx = 0; d.vy = 0;
    d.r = 3 + (d.importance || 3) * 1.2;
    d.color = data.categoryColors[d.category] || "#95a5a6";
  });
  var alpha = 1, MIN_ALPHA = 0.002, DECAY = 1 - Math.pow(MIN_ALPHA, 1 / 300);

  // One step of a force layout: springs along edges, short-range repulsion through a grid (so a large store
  // stays fast), a weak pull to the centre, velocity damping.
  function tick() {
    var cell = LINK * 2, grid = new Map(), i, j, d, o, dx, dy, dist2, f;
    for (i = 0; i < n; i++) {
      d = nodes[i];
      var key = Math.floor(d.x / cell) + "," + Math.floor(d.y / cell);
      var bucket = grid.get(key);
      if (bucket) bucket.push(i); else grid.set(key, [i]);
    }
    for (i = 0; i < n; i++) {
      d = nodes[i];
      var cx = Math.floor(d.x / cell), cy = Math.floor(d.y / cell);
      for (var gx = cx - 1; gx <= cx + 1; gx++) for (var gy = cy - 1; gy <= cy + 1; gy++) {
        var b = grid.get(gx + "," + gy);
        if (!b) continue;
        for (var k = 0; k < b.length; k++) {
          j = b[k];
          if (j <= i) continue;
          o = nodes[j]; dx = d.x - o.x; dy = d.y - o.y; dist2 = dx * dx + dy * dy;
          if (dist2 > cell * cell) continue;
          if (dist2 < 0.01) { dx = (i - j) * 0.1 + 0.1; dy = 0.1; dist2 = dx * dx + dy * dy; }
          f = alpha * LINK * LINK * 0.6 / dist2;
          d.vx += dx * f; d.vy += dy * f; o.vx -= dx * f; o.vy -= dy * f;
        }
      }
    }
    for (i = 0; i < edges.length; i++) {
      var e = edges[i], s = nodes[e.s], t = nodes[e.t];
      dx = t.x - s.x; dy = t.y - s.y;
      var dist = Math.sqrt(dx * dx + dy * dy) || 0.01;
      f = alpha * 0.5 * (dist - LINK) / dist / Math.max(1, Math.min(degree[e.s], degree[e.t]));
      s.vx += dx * f; s.vy += dy * f; t.vx -= dx * f; t.vy -= dy * f;
    }
    for (i = 0; i < n; i++) {
      d = nodes[i];
      d.vx -= d.x * 0.01 * alpha; d.vy -= d.y * 0.01 * alpha;
      if (d === held) { d.vx = d.vy = 0; continue; }
      d.vx *= 0.6; d.vy *= 0.6;
      var sp = Math.sqrt(d.vx * d.vx + d.vy * d.vy), cap = LINK;
      if (sp > cap) { d.vx *= cap / sp; d.vy *= cap / sp; }
      d.x += d.vx; d.y += d.vy;
    }
    alpha *= 1 - DECAY;
  }

  var view = { x: 0, y: 0, k: 1 }, userMoved = false, dpr = window.devicePixelRatio || 1;
  function resize() {
    canvas.width = Math.max(1, Math.floor(window.innerWidth * dpr));
    canvas.height = Math.max(1, Math.floor(window.innerHeight * dpr));
    draw();
  }
  function fit() {
    if (!n) return;
    var x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
    nodes.forEach(function (d) {
      x0 = Math.min(x0, d.x); y0 = Math.min(y0, d.y); x1 = Math.max(x1, d.x); y1 = Math.max(y1, d.y);
    });
    var w = window.innerWidth, h = window.innerHeight, pad = 60;
    view.k = Math.min(4, Math.min((w - 2 * pad) / Math.max(x1 - x0, 1), (h - 2 * pad) / Math.max(y1 - y0, 1)));
    view.x = w / 2 - view.k * (x0 + x1) / 2; view.y = h / 2 - view.k * (y0 + y1) / 2;
  }
  function draw() {
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.fillStyle = "#1a1a2e"; ctx.fillRect(0, 0, canvas.width, canvas.height);
    ctx.setTransform(dpr * view.k, 0, 0, dpr * view.k, dpr * view.x, dpr * view.y);
    var arrows = view.k > 0.6 && edges.length < 5000;
    ctx.lineWidth = 1.2 / view.k;
    ctx.globalAlpha = edges.length > 2000 ? 0.35 : 0.7;
    edges.forEach(function (e) {
      var s = nodes[e.s], t = nodes[e.t], color = data.edgeColors[e.type] || "#cccccc";
      ctx.strokeStyle = color;
      ctx.beginPath(); ctx.moveTo(s.x, s.y); ctx.lineTo(t.x, t.y); ctx.stroke();
      if (arrows) {
        var dx = t.x - s.x, dy = t.y - s.y, len = Math.sqrt(dx * dx + dy * dy) || 1, ux = dx / len, uy = dy / len;
        var tx = t.x - ux * (t.r + 1), ty = t.y - uy * (t.r + 1), a = 5;
        ctx.fillStyle = color; ctx.beginPath(); ctx.moveTo(tx, ty);
        ctx.lineTo(tx - ux * a - uy * a * 0.5, ty - uy * a + ux * a * 0.5);
        ctx.lineTo(tx - ux * a + uy * a * 0.5, ty - uy * a - ux * a * 0.5); ctx.fill();
      }
    });
    ctx.globalAlpha = 1;
    nodes.forEach(function (d) {
      ctx.fillStyle = d.color; ctx.beginPath(); ctx.arc(d.x, d.y, d.r, 0, 2 * Math.PI); ctx.fill();
    });
    if (view.k > 0.9 || n <= 60) {
      ctx.fillStyle = "#dddddd"; ctx.font = (11 / view.k) + "px system-ui, sans-serif";
      nodes.forEach(function (d) { ctx.fillText(d.id.slice(0, 8), d.x + d.r + 2 / view.k, d.y + 4 / view.k); });
    }
    if (hover) {
      ctx.strokeStyle = "#ffffff"; ctx.lineWidth = 2 / view.k;
      ctx.beginPath(); ctx.arc(hover.x, hover.y, hover.r + 2 / view.k, 0, 2 * Math.PI); ctx.stroke();
    }
  }
  // Small graphs are laid out before the first paint; large ones a slice per frame.
  var perFrame = n + edges.length < 2000 ? 400 : Math.max(1, Math.floor(400000 / (n + edges.length + 1)));
  var running = false;
  function run() {
    running = true;
    for (var k = 0; k < perFrame && alpha > MIN_ALPHA; k++) tick();
    if (!userMoved) fit();
    draw();
    if (alpha > MIN_ALPHA) requestAnimationFrame(run); else running = false;
  }
  function reheat() { alpha = Math.max(alpha, 0.3); if (!running) requestAnimationFrame(run); }

  function toWorld(px, py) { return { x: (px - view.x) / view.k, y: (py - view.y) / view.k }; }
  function pick(px, py) {
    var p = toWorld(px, py), best = null, bestD = Infinity;
    nodes.forEach(function (d) {
      var dx = d.x - p.x, dy = d.y - p.y, dd = dx * dx + dy * dy, r = d.r + 3 / view.k;
      if (dd < r * r && dd < bestD) { best = d; bestD = dd; }
    });
    return best;
  }
  var held = null, hover = null, panFrom = null;
  canvas.addEventListener("mousedown", function (ev) {
    held = pick(ev.clientX, ev.clientY);
    if (!held) panFrom = { x: ev.clientX - view.x, y: ev.clientY - view.y };
    canvas.classList.add("dragging");
  });
  window.addEventListener("mouseup", function () { held = null; panFrom = null; canvas.classList.remove("dragging"); });
  canvas.addEventListener("mousemove", function (ev) {
    if (held) {
      var p = toWorld(ev.clientX, ev.clientY); held.x = p.x; held.y = p.y; userMoved = true; reheat(); return;
    }
    if (panFrom) { view.x = ev.clientX - panFrom.x; view.y = ev.clientY - panFrom.y; userMoved = true; draw(); return; }
    var h = pick(ev.clientX, ev.clientY);
    if (h !== hover) { hover = h; draw(); }
    if (hover) {
      tip.textContent = hover.label + (hover.text.length > 60 ? "\\n\\n" + hover.text : "");
      tip.style.display = "block";
      tip.style.left = Math.min(ev.clientX + 14, window.innerWidth - 430) + "px";
      tip.style.top = (ev.clientY + 14) + "px";
    } else { tip.style.display = "none"; }
  });
  canvas.addEventListener("wheel", function (ev) {
    ev.preventDefault();
    var f = Math.exp(-ev.deltaY * 0.0015), k = Math.max(0.02, Math.min(20, view.k * f));
    view.x = ev.clientX - (ev.clientX - view.x) * k / view.k; view.y = ev.clientY - (ev.clientY - view.y) * k / view.k;
    view.k = k; userMoved = true; draw();
  }, { passive: false });
  window.addEventListener("resize", resize);
  resize();
  run();
})();
</script>
</body>
</html>
"""
