"""Look at a page as a person would: headless Chromium renders it to a PNG and reports its
layout (how wide the page really is, whether any table or image overflows).

Debian's ``chromium`` package (``make browser`` installs it); every run has a fresh profile
directory and no network features. ``find_chromium`` returns None when it is not installed, so
tests can skip with a reason instead of failing on a machine without a browser.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
)
# Written into a copy of the page: the layout, as JSON, in an element ``--dump-dom`` prints.
_PROBE = """<script>
window.addEventListener('load', () => {
  const doc = document.documentElement;
  const wide = [...document.querySelectorAll('table, img, pre')]
    .filter(e => e.getBoundingClientRect().right > doc.clientWidth + 0.5)
    .map(e => e.tagName.toLowerCase() + ':' + Math.round(e.getBoundingClientRect().right));
  const out = document.createElement('pre');
  out.id = 'layout-probe';
  out.textContent = JSON.stringify({scrollWidth: doc.scrollWidth, clientWidth: doc.clientWidth,
                                    overflowing: wide, images: document.images.length,
                                    broken: [...document.images].filter(i => !i.naturalWidth)
                                      .length});
  document.body.appendChild(out);
});
</script>"""


@dataclass(frozen=True)
class Layout:
    scroll_width: int  # the page's full width: more than the window means a sideways scroll
    client_width: int
    overflowing: tuple[str, ...]  # tables/images wider than the window ("table:1612")
    images: int
    broken_images: int


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def _run(args: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    chromium = find_chromium()
    if chromium is None:
        raise FileNotFoundError("chromium is not installed (make browser)")
    with tempfile.TemporaryDirectory(prefix="leasehold-chromium-") as profile:
        return subprocess.run(
            [chromium, *FLAGS, f"--user-data-dir={profile}", *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )


def screenshot(page: Path | str, png: Path, width: int = 1400, height: int = 2400) -> Path:
    """Render ``page`` (a file, or a URL) in a ``width`` x ``height`` window into ``png``, once
    its scripts have had five seconds of virtual time."""
    url = page.resolve().as_uri() if isinstance(page, Path) else page
    args = [f"--window-size={width},{height}", "--virtual-time-budget=5000", f"--screenshot={png}"]
    result = _run([*args, url], 120)
    if not png.exists():
        raise RuntimeError(f"chromium wrote no screenshot: {result.stderr[-2000:]}")
    return png


def layout(page: Path, width: int = 1400) -> Layout:
    """The page's layout in a ``width``-pixel window (a probe script in a copy of the page)."""
    text = page.read_text(encoding="utf-8")
    with tempfile.TemporaryDirectory(prefix="leasehold-layout-") as tmp:
        probe = Path(tmp) / page.name
        probe.write_text(text.replace("</body>", _PROBE + "</body>"), encoding="utf-8")
        result = _run(
            [f"--window-size={width},1000", "--virtual-time-budget=5000", "--dump-dom",
             probe.as_uri()],
            120,
        )  # fmt: skip
    marker = '<pre id="layout-probe">'
    if marker not in result.stdout:
        raise RuntimeError(f"the layout probe did not run: {result.stderr[-2000:]}")
    raw = result.stdout.split(marker, 1)[1].split("</pre>", 1)[0]
    data = json.loads(raw.replace("&quot;", '"').replace("&amp;", "&"))
    return Layout(
        data["scrollWidth"],
        data["clientWidth"],
        tuple(data["overflowing"]),
        data["images"],
        data["broken"],
    )
