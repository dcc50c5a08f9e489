"""Headless Chromium as the report tests use it: rendered DOM, console messages and a screenshot."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from tests.system_parts import render_page

pytestmark = pytest.mark.e2e

PAGE = """<!doctype html><html><body style="margin:0">
<h1 id="title">static text</h1><ul id="rows"></ul>
<script>
document.getElementById('title').textContent = 'rendered by script';
for (const name of ['a', 'b', 'c']) {
  const li = document.createElement('li'); li.className = 'row'; li.textContent = name;
  document.getElementById('rows').appendChild(li);
}
console.log('page-ready');
</script></body></html>
"""


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    return struct.unpack(">II", data[16:24])


def test_chromium_renders_a_page_to_dom_console_and_screenshot(chromium_path: str, tmp_path: Path) -> None:
    page = tmp_path / "page.html"
    page.write_text(PAGE)
    shot = tmp_path / "page.png"
    rendered = render_page(chromium_path, page.as_uri(), tmp_path / "chromium", screenshot=shot, window="640,480")
    assert '<h1 id="title">rendered by script</h1>' in rendered.dom
    assert rendered.dom.count('class="row"') == 3
    assert any('"page-ready"' in line for line in rendered.console)
    assert png_size(shot) == (640, 480)


def test_uncaught_script_errors_reach_the_console_lines(chromium_path: str, tmp_path: Path) -> None:
    page = tmp_path / "broken.html"
    page.write_text("<!doctype html><html><body><script>notDefinedAnywhere();</script></body></html>")
    rendered = render_page(chromium_path, page.as_uri(), tmp_path / "chromium")
    assert any("Uncaught ReferenceError: notDefinedAnywhere" in line for line in rendered.console)
