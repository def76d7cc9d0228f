"""`mnemon viz` (reference §1.2): exact DOT, a self-contained HTML page (no network: embedded JSON, inline
script), and the page opened in headless Chromium actually draws the nodes (a screenshot, decoded here)."""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

from mnemon_core import Edge, Memory, ValidationError
from mnemon_core.faces.viz import CATEGORY_COLORS, EDGE_COLORS, render

TRICKY = 'He said "ship it" </script><!-- & then\nleft'


def test_dot_exact(mem: Memory) -> None:
    a = mem.remember("Chose Qdrant because filtering is fast", category="decision", source="s").id
    b = mem.remember(TRICKY, category="fact", source="s").id
    long_text = "数据库" * 30  # 270 bytes: cut at 60 bytes, on a character boundary
    c = mem.remember(long_text, source="other").id
    mem.link(a, c, type="supersedes", weight=1.0)
    dot = render(mem, "dot")
    lines = dot.splitlines()
    assert lines[:5] == [
        "digraph mnemon {",
        "  rankdir=LR;",
        '  node [shape=box, style="filled,rounded", fontsize=10, fontname="Helvetica"];',
        '  edge [fontsize=8, fontname="Helvetica"];',
        "",
    ]
    assert lines[5:8] == [
        (f'  "{a}" [label="{a[:8]}: [decision] Chose Qdrant because filtering is fast", fillcolor="#e74c3c", '
         'fontcolor="white"];'),
        (f'  "{b}" [label="{b[:8]}: [fact] He said \\"ship it\\" </script><!-- & then left", fillcolor="#3498db", '
         'fontcolor="white"];'),
        f'  "{c}" [label="{c[:8]}: [general] {"数据库" * 6}数据...", fillcolor="#95a5a6", fontcolor="white"];',
    ]
    assert lines[8] == ""
    edge_lines = lines[9:-1]
    assert f'  "{a}" -> "{b}" [label="backbone", color="#aaaaaa", fontcolor="#aaaaaa"];' in edge_lines
    assert f'  "{a}" -> "{c}" [label="supersedes", color="#e67e22", fontcolor="#e67e22"];' in edge_lines
    assert len(edge_lines) == mem.store.count_edges()
    assert lines[-1] == "}" and dot.endswith("}\n")


def test_only_edges_between_active_nodes(mem: Memory) -> None:
    a = mem.remember("kept one", source="x").id
    b = mem.remember("kept two", source="y").id
    gone = mem.remember("forgotten", source="z").id
    mem.forget(gone)
    # An edge left pointing at a soft-deleted insight must not be drawn.
    mem.store.upsert_edge(Edge(source_id=a, target_id=gone, edge_type="causal", created_at="2026-01-01T00:00:00Z"))
    mem.link(a, b, type="causal", metadata={"sub_type": "enables"})
    dot = render(mem, "dot")
    assert gone not in dot
    assert dot.count(" -> ") == mem.store.count_edges() - 1  # all but the dangling one
    assert f'"{a}" -> "{b}" [label="enables", color="#e74c3c"' in dot


def test_empty_store(mem: Memory) -> None:
    assert render(mem, "dot").splitlines()[-3:] == ["", "", "}"]
    page = render(mem, "html")
    assert json.loads(embedded(page))["nodes"] == []


def test_unsupported_format(mem: Memory, cli, data_dir) -> None:
    with pytest.raises(ValidationError, match=r"^unsupported format: svg \(use dot or html\)$"):
        render(mem, "svg")
    mem.status()  # creates the store: the CLI reads a named store (Postgres here) only once it exists
    r = cli("viz", "--format", "png")
    assert (r.code, r.out, r.err) == (1, "", "Error: unsupported format: png (use dot or html)\n")


def embedded(page: str) -> str:
    m = re.search(r'<script id="mnemon-data" type="application/json">(.*?)</script>', page, re.DOTALL)
    assert m
    return m.group(1)


def test_html_is_self_contained(mem: Memory) -> None:
    a = mem.remember(TRICKY, category="decision").id
    b = mem.remember("a plain fact", category="fact").id
    mem.link(a, b, type="causal")
    page = render(mem, "html")
    assert page.startswith("<!DOCTYPE html>")
    # Nothing loads from anywhere: no external scripts, styles, images or fonts.
    assert not re.search(r"<(script|link|img|iframe)[^>]*\s(src|href)\s*=", page, re.IGNORECASE)
    assert "@import" not in page and "url(" not in page
    assert "<canvas" in page
    # The content cannot end the data element early: only the page's own two scripts close.
    assert page.count("</script>") == 2 and "<!--" not in page
    data = json.loads(embedded(page))
    assert [n["text"] for n in data["nodes"]] == [TRICKY, "a plain fact"]
    assert [n["category"] for n in data["nodes"]] == ["decision", "fact"]
    assert {(e["s"], e["t"], e["type"]) for e in data["edges"]} >= {(0, 1, "causal"), (1, 0, "causal")}
    assert data["categoryColors"] == {str(k): v for k, v in CATEGORY_COLORS.items()}
    assert data["edgeColors"] == {str(k): v for k, v in EDGE_COLORS.items()}
    legend = page[page.index('<div id="legend">'):page.index("</div>\n<div id=\"tip\"")]
    for name in [*CATEGORY_COLORS, *EDGE_COLORS]:
        assert f"{name} <i>" in legend
    assert "decision <i>1</i>" in legend and "fact <i>1</i>" in legend


def test_cli_writes_file(cli, data_dir, tmp_path: Path) -> None:
    assert cli("remember", "something to draw").code == 0
    out = tmp_path / "graph.html"
    r = cli("viz", "--format", "html", "-o", str(out))
    assert (r.code, r.out, r.err) == (0, "", f"written to {out}\n")
    to_stdout = cli("viz", "--format", "html")
    assert to_stdout.out == out.read_text(encoding="utf-8")
    assert cli("viz").out.startswith("digraph mnemon {\n")


# ---------------------------------------------------------------------------------------------------------------
# headless Chromium


def chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


def read_png(path: Path) -> tuple[int, int, list[bytes]]:
    """(width, height, rows of RGB bytes) of an 8-bit RGB or RGBA PNG, decoded with the standard library."""
    raw = path.read_bytes()
    assert raw[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, header = 8, b"", None
    while pos < len(raw):
        (length,) = struct.unpack(">I", raw[pos:pos + 4])
        kind, body = raw[pos + 4:pos + 8], raw[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
    width, height, depth, ctype, _, _, interlace = header
    assert depth == 8 and ctype in (2, 6) and interlace == 0
    bpp = 3 if ctype == 2 else 4
    data = zlib.decompress(idat)
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        f = data[y * (stride + 1)]
        line = bytearray(data[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 0xFF
            elif f == 2:
                line[i] = (line[i] + b) & 0xFF
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 0xFF
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
        rows.append(bytes(line) if bpp == 3 else bytes(v for i, v in enumerate(line) if i % 4 != 3))
        prev = line
    return width, height, rows


def screenshot(page: Path, png: Path) -> None:
    browser = chromium()
    subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=900,600",
         "--virtual-time-budget=5000", f"--screenshot={png}", page.as_uri()],
        capture_output=True, timeout=120, check=False,
    )
    assert png.exists(), "chromium wrote no screenshot"


def colour_pixels(rows: list[bytes], width: int, colour: str, max_x: int) -> int:
    rgb = bytes.fromhex(colour[1:])
    return sum(1 for row in rows for x in range(min(width, max_x)) if row[3 * x:3 * x + 3] == rgb)


@pytest.mark.integration
@pytest.mark.skipif(chromium() is None, reason="chromium is not installed (apt-get install -y chromium)")
def test_html_renders_nodes_in_chromium(data_dir, tmp_path: Path) -> None:
    mem = Memory()
    ids = [mem.remember(f"decision number {i} about Redis", category="decision", source="s").id for i in range(12)]
    ids += [mem.remember(f"fact number {i} about Kafka", category="fact", source="s").id for i in range(8)]
    mem.link(ids[0], ids[-1], type="causal")
    full, empty = tmp_path / "graph.html", tmp_path / "empty.html"
    full.write_text(render(mem, "html"), encoding="utf-8")
    mem.close()
    empty.write_text(render(Memory(store="nothing-here"), "html"), encoding="utf-8")
    for page in (full, empty):
        screenshot(page, page.with_suffix(".png"))

    graph_area = 650  # left of the legend (top right) so legend dots do not count
    width, height, rows = read_png(full.with_suffix(".png"))
    assert (width, height) == (900, 600)
    assert len({row[i:i + 3] for row in rows[::7] for i in range(0, len(row), 21)}) > 5  # not blank
    red = colour_pixels(rows, width, CATEGORY_COLORS["decision"], graph_area)
    blue = colour_pixels(rows, width, CATEGORY_COLORS["fact"], graph_area)
    assert red > 12 * 20 and blue > 8 * 20  # every node a filled disc of dozens of pixels

    width, _, rows = read_png(empty.with_suffix(".png"))
    assert colour_pixels(rows, width, CATEGORY_COLORS["decision"], graph_area) == 0
