"""Shared helpers of the report tests: reading the crash matrix back out of the reports (the
SVG with ``xml.etree``, the Markdown table by hand), a known failing run, and a real headless
browser when one is installed.

The expectations here are written out by hand (the letter and the colour of each outcome, the
trials a mutant breaks), never taken from the code under test.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import zlib
from collections.abc import Iterator
from html import unescape
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

#: The legend, as docs/reports.md states it: one letter and one fill colour per outcome.
LETTERS = {"passed": "P", "failed": "F", "unreached": "U", "error": "E", "not_claimed": "N", "not_run": "-"}
FILLS = {"passed": (0x8D, 0xDB, 0x9E), "failed": (0xD1, 0x24, 0x2F), "unreached": (0x82, 0x50, 0xDF),
         "error": (0xBC, 0x4C, 0x00), "not_claimed": (0xD0, 0xD7, 0xDE), "not_run": (0xF6, 0xF8, 0xFA)}

#: A mutant of the reference whose crash trials fail at known cells (docs/selftest.md): it
#: writes the effect log and performs the side effect *before* T1 commits, so a kill at P1 or
#: P2 in the live loop under the T1 protocol finds an effect the store does not know about,
#: while the prefix mode (no tool runs) and the legacy protocol (allowed to run first) pass.
MUTANT = "runtime-effect-before-t1"
MUTANT_COMMAND = (sys.executable, "-m", "maka_ref.adapter", "--mutant", MUTANT)
#: The small sweep run against it: points P1 and P2, the kill fault, every mode.
MUTANT_POINTS = ("P1", "P2")
MUTANT_SWEEP = {  # trial id -> the outcome the mutant must get
    "P1-prefix-kill-s0-r0": "passed", "P1-live-t1-kill-s0-r0": "failed", "P1-live-legacy-kill-s0-r0": "passed",
    "P2-prefix-kill-s0-r0": "passed", "P2-live-t1-kill-s0-r0": "failed", "P2-live-legacy-kill-s0-r0": "passed",
}

SVG_NS = "{http://www.w3.org/2000/svg}"


# --------------------------------------------------------------------------- the picture


def crash_svg(html: str) -> ET.Element:
    """The crash matrix ``<svg>`` of a report page, parsed as XML (it must be well-formed)."""
    found = re.findall(r'<svg xmlns="http://www\.w3\.org/2000/svg" class="crash-matrix".*?</svg>', html, re.DOTALL)
    assert len(found) == 1, f"expected one crash matrix picture, found {len(found)}"
    return ET.fromstring(found[0])


def svg_trials(svg: ET.Element) -> list[dict[str, Any]]:
    """Every trial cell of the picture: its data attributes, the rect's fill and geometry,
    the letter drawn on it, its hover title and link (``None`` when not linked)."""
    parents = {child: parent for parent in svg.iter() for child in parent}
    out = []
    for g in svg.iter(f"{SVG_NS}g"):
        if "data-trial" not in g.attrib:
            continue
        rect = g.find(f"{SVG_NS}rect")
        text = g.find(f"{SVG_NS}text")
        title = g.find(f"{SVG_NS}title")
        parent = parents.get(g)
        href = parent.get("href") if parent is not None and parent.tag == f"{SVG_NS}a" else None
        assert rect is not None and title is not None
        out.append({"trial": g.get("data-trial"), "outcome": g.get("data-outcome"), "point": g.get("data-point"),
                    "fault": g.get("data-fault"), "mode": g.get("data-mode"), "platform": g.get("data-platform"),
                    "fill": rect.get("fill"), "x": float(rect.get("x", 0)), "y": float(rect.get("y", 0)),
                    "letter": text.text if text is not None else None, "title": title.text or "", "href": href})
    return out


def hex_fill(rgb: tuple[int, int, int]) -> str:
    return "#{:02x}{:02x}{:02x}".format(*rgb)


def markdown_grid(markdown: str) -> tuple[list[str], dict[str, list[str]]]:
    """The crash matrix table under ``## Crash matrix``: its column headers (``fault/mode``)
    and, per point, the letters of each cell (bold markers removed)."""
    section = markdown.split("## Crash matrix", 1)[1].splitlines()
    start = next(n for n, line in enumerate(section) if line.startswith("|"))
    lines = []
    for line in section[start:]:
        if not line.startswith("|"):
            break
        lines.append(line)
    header = [c.strip() for c in lines[0].strip().strip("|").split("|")]
    assert header[0] == "point", header
    rows: dict[str, list[str]] = {}
    for line in lines[2:]:
        cells = [c.strip().replace("*", "") for c in line.strip().strip("|").split("|")]
        rows[cells[0]] = cells[1:]
    return header[1:], rows


def expected_letters(trials: list[dict[str, Any]]) -> dict[tuple[str, str, str], str]:
    """(point, fault, mode) -> the letters its trials must show, in order, from raw
    ``{"point", "fault", "mode", "outcome"}`` records (the report's own data)."""
    out: dict[tuple[str, str, str], str] = {}
    for t in trials:
        key = (t["point"], t["fault"], t["mode"])
        out[key] = out.get(key, "") + LETTERS[t["outcome"]]
    return out


# --------------------------------------------------------------------------- a real browser


def browser() -> str | None:
    """A headless-capable Chromium on this machine (Debian's ``chromium``), or ``None``."""
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


#: The reason the browser tests give when they cannot run.
NO_BROWSER = "no headless Chromium on this machine (Debian: apt-get install chromium)"
BROWSER_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--hide-scrollbars", "--force-device-scale-factor=1",
                 "--force-color-profile=srgb")
WINDOW = (1280, 3200)


def run_browser(*args: str, timeout: float = 90.0) -> str:
    """Run the browser once with a fresh profile; its whole process group is killed at the end
    (Chromium leaves helpers behind when its main process is killed), so nothing leaks."""
    exe = browser()
    assert exe is not None
    profile = tempfile.mkdtemp(prefix="report-browser-")
    argv = [exe, *BROWSER_FLAGS, f"--user-data-dir={profile}", f"--window-size={WINDOW[0]},{WINDOW[1]}", *args]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
        shutil.rmtree(profile, ignore_errors=True)
    return out.decode("utf-8", "replace")


#: Appended to a *copy* of a report (the report itself has no script): for every trial cell,
#: what the browser made of it — outcome, computed fill, box on the page, and which trial a
#: click on its middle hits.
PROBE = """<script>(function(){var out=[];
document.querySelectorAll('svg.crash-matrix g.cm-trial').forEach(function(g){
 var r=g.querySelector('rect'), b=r.getBoundingClientRect();
 var hit=document.elementFromPoint(b.left+b.width/2, b.top+b.height/2);
 var owner=hit&&hit.closest?hit.closest('g.cm-trial'):null;
 out.push({trial:g.getAttribute('data-trial'), outcome:g.getAttribute('data-outcome'),
  fill:getComputedStyle(r).fill, x:b.left+window.scrollX, y:b.top+window.scrollY, w:b.width, h:b.height,
  hit:owner?owner.getAttribute('data-trial'):null});});
var pre=document.createElement('pre'); pre.id='crash-probe'; pre.textContent=JSON.stringify(out);
document.body.appendChild(pre);})();</script>"""


def browser_cells(page: Path, workdir: Path) -> list[dict[str, Any]]:
    """The trial cells as the browser laid them out (``--dump-dom`` of a probed copy of
    ``page`` written into ``workdir``)."""
    probe = workdir / (page.stem + ".probe.html")
    probe.write_text(page.read_text(encoding="utf-8").replace("</body>", PROBE + "</body>"), encoding="utf-8")
    dom = run_browser("--dump-dom", probe.as_uri())
    match = re.search(r'<pre id="crash-probe">(.*?)</pre>', dom, re.DOTALL)
    assert match, f"the probe did not run in the browser: {dom[:500]!r}"
    return json.loads(unescape(match.group(1)))


def screenshot(page: Path, target: Path) -> Png:
    run_browser(f"--screenshot={target}", page.as_uri())
    return Png(target.read_bytes())


class Png:
    """A decoded 8-bit RGB/RGBA PNG (what Chromium's screenshots are), standard library only."""

    def __init__(self, data: bytes) -> None:
        assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
        chunks: dict[bytes, list[bytes]] = {}
        pos = 8
        while pos < len(data):
            (length,) = struct.unpack(">I", data[pos:pos + 4])
            kind = data[pos + 4:pos + 8]
            chunks.setdefault(kind, []).append(data[pos + 8:pos + 8 + length])
            pos += 12 + length
        self.width, self.height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", chunks[b"IHDR"][0])
        assert depth == 8 and colour in (2, 6) and interlace == 0, (depth, colour, interlace)
        self.channels = 3 if colour == 2 else 4
        self._raw = zlib.decompress(b"".join(chunks[b"IDAT"]))
        self._rows: list[bytearray] = []

    def _row(self, y: int) -> bytearray:
        """Rows are unfiltered on demand, top down (each depends on the one above): a
        screenshot's cells sit near the top, and pure Python is slow on a whole page."""
        stride = self.width * self.channels
        n = self.channels
        while len(self._rows) <= y:
            at = len(self._rows)
            prev = self._rows[-1] if self._rows else bytearray(stride)
            base = at * (stride + 1)
            kind, line = self._raw[base], bytearray(self._raw[base + 1:base + 1 + stride])
            for i in range(stride):
                a = line[i - n] if i >= n else 0
                b = prev[i]
                if kind == 1:
                    line[i] = (line[i] + a) & 0xFF
                elif kind == 2:
                    line[i] = (line[i] + b) & 0xFF
                elif kind == 3:
                    line[i] = (line[i] + (a + b) // 2) & 0xFF
                elif kind == 4:
                    c = prev[i - n] if i >= n else 0
                    p = a + b - c
                    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                    line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
            self._rows.append(line)
        return self._rows[y]

    def pixel(self, x: float, y: float) -> tuple[int, int, int]:
        row = self._row(int(y))
        i = int(x) * self.channels
        return row[i], row[i + 1], row[i + 2]


def close_to(rgb: tuple[int, int, int], want: tuple[int, int, int], tolerance: int = 8) -> bool:
    return all(abs(a - b) <= tolerance for a, b in zip(rgb, want))


def cells_in_view(cells: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for cell in cells:
        assert cell["y"] + cell["h"] < WINDOW[1], f"cell {cell['trial']} is below the screenshot"
        yield cell
