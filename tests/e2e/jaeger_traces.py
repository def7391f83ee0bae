"""Traces as Jaeger's JSON API returns them, flattened for assertions, and a screenshot helper.

:class:`Trace` reads one trace of ``/api/traces`` (spans, their ``CHILD_OF`` references, tags and
the ``processes`` table naming each span's service). Spans are found by what OpenTelemetry's
semantic conventions and Leasehold's ``leasehold.*`` attributes say they are (``rpc.service``,
``rpc.method``, ``span.kind``), not by display name.

:func:`screenshot` is for people, not assertions: headless Chromium (Debian's ``chromium``)
takes a picture of the trace in Jaeger's UI into ``test-output/jaeger/`` (gitignored). When the
Jaeger binary has no UI assets (see :mod:`leasehold.testing.jaeger`) the UI is a placeholder
page, and the picture is of a plain waterfall drawn from the same API answer instead, saying so.
"""

from __future__ import annotations

import html
import tempfile
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from leasehold.testing import browser

OUTPUT = Path(__file__).resolve().parents[2] / "test-output" / "jaeger"


@dataclass(frozen=True)
class Span:
    service: str
    name: str
    span_id: str
    parent_id: str  # "" for a root
    tags: dict
    start_us: int
    duration_us: int
    links: tuple[str, ...] = ()  # trace ids of the spans it links to (FOLLOWS_FROM references)

    @property
    def kind(self) -> str:
        return str(self.tags.get("span.kind", "internal"))

    def rpc(self, method: str, kind: str) -> bool:
        """Whether this is a gRPC span of ``kind`` ("server"/"client") for ``method``."""
        return self.kind == kind and self.tags.get("rpc.method") == method


class Trace:
    def __init__(self, raw: dict) -> None:
        self.raw = raw
        self.trace_id: str = raw["traceID"]
        self.warnings = list(raw.get("warnings") or [])
        services = {pid: p["serviceName"] for pid, p in raw["processes"].items()}
        self.spans = [
            Span(
                service=services[s["processID"]],
                name=s["operationName"],
                span_id=s["spanID"],
                parent_id=next(
                    (r["spanID"] for r in s.get("references") or [] if r["refType"] == "CHILD_OF"),
                    "",
                ),
                tags={t["key"]: t["value"] for t in s.get("tags") or []},
                start_us=s["startTime"],
                duration_us=s["duration"],
                links=tuple(
                    r["traceID"]
                    for r in s.get("references") or []
                    if r["refType"] == "FOLLOWS_FROM"
                ),
            )
            for s in raw["spans"]
        ]
        self.by_id = {s.span_id: s for s in self.spans}

    def children(self, span: Span) -> list[Span]:
        return [s for s in self.spans if s.parent_id == span.span_id]

    def roots(self) -> list[Span]:
        return [s for s in self.spans if not s.parent_id]

    def orphans(self) -> list[Span]:
        """Spans naming a parent that is not in the trace."""
        return [s for s in self.spans if s.parent_id and s.parent_id not in self.by_id]

    def where(self, **tags: object) -> list[Span]:
        return [s for s in self.spans if all(s.tags.get(k) == v for k, v in tags.items())]

    def depth(self, span: Span) -> int:
        d = 0
        while span.parent_id in self.by_id:
            span, d = self.by_id[span.parent_id], d + 1
        return d


# ------------------------------------------------------------------------------ the picture


def _waterfall(trace: Trace, note: str) -> str:
    start = min(s.start_us for s in trace.spans)
    end = max(s.start_us + s.duration_us for s in trace.spans)
    width = max(end - start, 1)
    order: list[Span] = []  # depth first, siblings by start time

    def visit(span: Span) -> None:
        order.append(span)
        for child in sorted(trace.children(span), key=lambda c: c.start_us):
            visit(child)

    for root in sorted(trace.roots() + trace.orphans(), key=lambda s: s.start_us):
        visit(root)
    rows = []
    for s in order:
        left = 100 * (s.start_us - start) / width
        bar = max(100 * s.duration_us / width, 0.3)
        rows.append(
            f"<tr><td style='padding-left:{14 * trace.depth(s)}px'>"
            f"<b>{html.escape(s.service)}</b> {html.escape(s.name)}</td>"
            f"<td class=t><div class=b style='margin-left:{left:.2f}%;width:{bar:.2f}%'></div>"
            f"</td><td>{s.duration_us / 1000:.1f} ms</td></tr>"
        )
    return (
        "<html><head><meta charset=utf-8><style>body{font:13px sans-serif;margin:16px}"
        "td{padding:2px 6px;white-space:nowrap}td.t{width:55%}.b{height:10px;background:#3b7dd8}"
        "</style></head><body>"
        f"<h3>Trace {trace.trace_id}: {len(trace.spans)} spans</h3><p>{html.escape(note)}</p>"
        f"<table>{''.join(rows)}</table></body></html>"
    )


def _placeholder(ui_url: str) -> bool:
    with urllib.request.urlopen(ui_url, timeout=10) as resp:
        return b"placeholder for the Jaeger UI" in resp.read()


def screenshot(trace: Trace, ui_url: str, name: str) -> Path | None:
    """A PNG of ``trace`` in Jaeger's UI (or, without UI assets, of a waterfall drawn from the
    API's answer); None when Chromium is not installed."""
    if browser.find_chromium() is None:
        return None
    OUTPUT.mkdir(parents=True, exist_ok=True)
    out = OUTPUT / f"{name}.png"
    url = f"{ui_url}/trace/{trace.trace_id}"
    with tempfile.TemporaryDirectory(prefix="leasehold-trace-") as tmp:
        page: Path | str = url
        if _placeholder(ui_url):
            page = Path(tmp) / "trace.html"
            note = f"Drawn from {url} 's JSON: this Jaeger binary has no UI assets."
            page.write_text(_waterfall(trace, note))
        browser.screenshot(page, out, width=1600, height=1000)
    return out
