"""The benchmark framework's bookkeeping: percentiles, load windows, tables, suite loading, runs.

Pure and fast: a fake clock drives the load generator, so no assertion depends on real time.
"""

from __future__ import annotations

import asyncio
import itertools
import json

import pytest
from rich.console import Console

from bench import raw_grpc
from bench.framework import (
    NS_PER_MS,
    BenchSuite,
    Column,
    Load,
    Result,
    Row,
    RunContext,
    closed_loop,
    percentile,
)
from bench.report import SuiteRun, result_table, write_json
from bench.runner import (
    MainSuite,
    SuiteEntry,
    call_main,
    load,
    load_failure,
    main_arguments,
    run_suite,
    split_output,
)

MS = NS_PER_MS


@pytest.mark.parametrize(
    ("samples", "q", "expected"),
    [
        ([1, 2, 3, 4], 50, 2.5),
        ([4, 3, 2, 1], 50, 2.5),
        ([5], 99, 5),
        ([3, 1, 2], 0, 1),
        ([3, 1, 2], 100, 3),
        (list(range(1, 101)), 99, 99.01),
        ([10, 20], 25, 12.5),
    ],
)
def test_percentile_interpolates_between_ranks(samples, q, expected):
    assert percentile(samples, q) == pytest.approx(expected)


@pytest.mark.parametrize(("samples", "q"), [([], 50), ([1], -1), ([1], 100.5)])
def test_percentile_rejects_bad_input(samples, q):
    with pytest.raises(ValueError):
        percentile(samples, q)


def test_load_figures():
    load = Load(
        ops=250, elapsed_ns=2_000 * MS, latencies_ns=(1 * MS, 2 * MS, 3 * MS, 4 * MS, 5 * MS)
    )
    assert load.calls == 5
    assert load.figures() == pytest.approx(
        {"ops_per_s": 125.0, "calls_per_s": 2.5, "p50_ms": 3.0, "p99_ms": 4.96}
    )
    assert Load(0, 0, (1,)).ops_per_s == 0.0


def fake_clock(step_ns: int):
    """A clock that advances ``step_ns`` each time it is read: 0, step, 2*step..."""
    ticks = itertools.count()
    return lambda: next(ticks) * step_ns


async def test_closed_loop_counts_only_the_measured_window():
    # Reads: 0 (window = 2..6 ms); worker: start 1 end 2 (warm-up); 3-4 and 5-6 counted; 7 stops.
    returned = iter([10, 20, 30, 40])

    async def op(worker: int) -> int:
        assert worker == 0
        return next(returned)

    load = await closed_loop(
        op, concurrency=1, duration_s=0.004, warmup_s=0.002, clock=fake_clock(MS)
    )
    assert (load.ops, load.elapsed_ns, load.latencies_ns) == (50, 4 * MS, (MS, MS))


async def test_closed_loop_counts_one_call_when_the_warm_up_ate_the_window():
    # A call starting in the warm-up returns after the window (a starved machine): another
    # call is made and counted, so the window has a sample.
    ticks = iter([0, 1, 50, 51, 53, 54])  # the window is 2..4 ms; the first call takes 49 ms
    load = await closed_loop(
        _one_op, concurrency=1, duration_s=0.002, warmup_s=0.002, clock=lambda: next(ticks) * MS
    )
    assert (load.ops, load.latencies_ns) == (1, (2 * MS,))


async def _one_op(worker: int) -> int:
    return 1


async def test_closed_loop_keeps_every_worker_busy():
    in_flight, peak, calls = [0], [0], [0, 0, 0]

    async def op(worker: int) -> int:
        in_flight[0] += 1
        peak[0] = max(peak[0], in_flight[0])
        calls[worker] += 1
        await asyncio.sleep(0)
        in_flight[0] -= 1
        return worker + 1

    load = await closed_loop(op, concurrency=3, duration_s=0.05, clock=fake_clock(1000))
    assert peak[0] == 3
    assert load.calls == sum(calls)
    assert load.ops == calls[0] * 1 + calls[1] * 2 + calls[2] * 3


async def test_closed_loop_needs_a_worker():
    async def op(worker: int) -> int:
        return 1

    with pytest.raises(ValueError):
        await closed_loop(op, concurrency=0, duration_s=1)


COLUMNS = (Column("ops_per_s", "ops/s"), Column("p99_ms", "p99 ms", ".1f"))


def table(*rows: Row, baseline: str = "base") -> Result:
    return Result("t", COLUMNS, rows, baseline=baseline, ratio_of="ops_per_s", notes=("n",))


def test_result_ratios_and_json():
    result = table(
        Row("base", {"ops_per_s": 200.0, "p99_ms": 2.0}),
        Row("fast", {"ops_per_s": 500.0}, note="x"),
        Row("blank", {"p99_ms": 1.0}),
    )
    assert [result.ratio(r) for r in result.rows] == [1.0, 2.5, None]
    assert result.to_json() == {
        "title": "t",
        "baseline": "base",
        "ratio_of": "ops_per_s",
        "columns": [{"key": "ops_per_s", "header": "ops/s"}, {"key": "p99_ms", "header": "p99 ms"}],
        "rows": [
            {
                "label": "base",
                "values": {"ops_per_s": 200.0, "p99_ms": 2.0},
                "ratio_to_baseline": 1.0,
                "note": "",
            },
            {
                "label": "fast",
                "values": {"ops_per_s": 500.0},
                "ratio_to_baseline": 2.5,
                "note": "x",
            },
            {"label": "blank", "values": {"p99_ms": 1.0}, "ratio_to_baseline": None, "note": ""},
        ],
        "notes": ["n"],
    }


def test_result_with_zero_baseline_has_no_ratio():
    result = table(Row("base", {"ops_per_s": 0.0}), Row("b", {"ops_per_s": 3.0}))
    assert result.ratio(result.row("b")) is None


@pytest.mark.parametrize(
    ("rows", "baseline", "ratio_of"),
    [
        ((Row("a", {}),), "missing", "ops_per_s"),
        ((Row("a", {}), Row("a", {})), "a", "ops_per_s"),
        ((Row("a", {}),), "a", "not_a_column"),
    ],
)
def test_result_rejects_inconsistent_tables(rows, baseline, ratio_of):
    with pytest.raises(ValueError):
        Result("t", COLUMNS, rows, baseline=baseline, ratio_of=ratio_of)


def test_rendered_table_marks_the_baseline():
    result = table(
        Row("base", {"ops_per_s": 200.0, "p99_ms": 2.0}), Row("fast", {"ops_per_s": 500})
    )
    console = Console(record=True, width=200)
    console.print(result_table(result))
    lines = [line.split("│")[1:-1] for line in console.export_text().splitlines() if "│" in line]
    cells = [[c.strip() for c in line] for line in lines]
    assert cells == [["base  (baseline)", "200", "2.0", "1.00x"], ["fast", "500", "—", "2.50x"]]


@pytest.mark.parametrize(
    ("fmt", "value", "expected"),
    [
        ("auto", 12_345.6, "12,346"),
        ("auto", 100.0, "100"),
        ("auto", 99.95, "100"),
        ("auto", 0.5893, "0.589"),
        ("auto", 5.0, "5"),
        (",.2f", 1_234.567, "1,234.57"),
    ],
)
def test_column_format(fmt, value, expected):
    assert Column("k", "h", fmt).format(value) == expected


def test_rendered_table_shows_row_notes_only_when_some_row_has_one():
    result = table(Row("base", {"ops_per_s": 0.5}, note="slow"), Row("b", {"ops_per_s": 1.0}))
    console = Console(record=True, width=200)
    console.print(result_table(result))
    lines = [line.split("│")[1:-1] for line in console.export_text().splitlines() if "│" in line]
    cells = [[c.strip() for c in line] for line in lines]
    assert cells == [
        ["base  (baseline)", "0.5", "—", "1.00x", "slow"],
        ["b", "1", "—", "2.00x", ""],
    ]


def test_run_context_picks_by_mode():
    assert (RunContext().pick(5.0, 0.3), RunContext(quick=True).pick(5.0, 0.3)) == (5.0, 0.3)


def main_with_quick(quick: bool) -> None: ...
def main_with_argv(argv=None) -> None: ...
def main_without_args() -> None: ...
def main_with_varargs(*argv: str) -> None: ...


@pytest.mark.parametrize(
    ("main", "quick", "expected"),
    [
        (main_with_quick, True, ((), {"quick": True})),
        (main_with_quick, False, ((), {"quick": False})),
        (main_with_argv, True, ((["--quick"],), {})),
        (main_with_argv, False, (([],), {})),
        (main_without_args, True, ((), {})),
        (main_with_varargs, False, (([],), {})),
    ],
)
def test_main_arguments(main, quick, expected):
    assert main_arguments(main, quick) == expected


def exits(code):
    def main() -> None:
        raise SystemExit(code)

    return main


async def async_main(quick: bool) -> dict:
    return {"quick": quick}


@pytest.mark.parametrize(
    ("main", "expected"),
    [
        (lambda: 0, None),
        (lambda: None, None),
        (lambda: {"rows": 3}, {"rows": 3}),
        (exits(0), None),
        (exits(None), None),
        (async_main, {"quick": True}),
    ],
)
def test_call_main_results(main, expected):
    assert call_main(main, quick=True) == expected


@pytest.mark.parametrize("main", [lambda: 3, exits(2)])
def test_call_main_nonzero_status_fails(main):
    with pytest.raises(RuntimeError, match="exited with status"):
        call_main(main, quick=False)


def test_split_output():
    one = table(Row("base", {"ops_per_s": 1.0}))
    assert split_output(one) == ((one,), None)
    assert split_output([one, one]) == ((one, one), None)
    assert split_output([]) == ((), None)
    assert split_output(None) == ((), None)
    assert split_output({"a": 1}) == ((), {"a": 1})


def test_load_finds_suites_and_skips_absent_optional_ones():
    assert load(SuiteEntry("raw_grpc", "bench.raw_grpc")) is raw_grpc.SUITE
    assert load(SuiteEntry("nope", "bench.no_such_suite", optional=True)) is None
    with pytest.raises(ModuleNotFoundError):
        load(SuiteEntry("nope", "bench.no_such_suite"))


def suite_of(body) -> BenchSuite:
    return BenchSuite("demo", "a demo", body)


def test_run_suite_records_results_failures_and_timeouts(tmp_path):
    one = table(Row("base", {"ops_per_s": 1.0}))

    async def good(ctx: RunContext) -> list[Result]:
        return [one]

    async def broken(ctx: RunContext) -> list[Result]:
        raise RuntimeError("boom")

    async def hangs(ctx: RunContext) -> list[Result]:
        await asyncio.Event().wait()
        return []

    async def waits_too_long_inside(ctx: RunContext) -> list[Result]:
        raise TimeoutError("cluster not steady after 900s")

    ok = run_suite("demo", suite_of(good), RunContext(quick=True), limit=5)
    assert (ok.status, ok.results, ok.error, ok.quick) == ("ok", (one,), "", True)
    failed = run_suite("demo", suite_of(broken), RunContext(), limit=5)
    assert (failed.status, failed.error.splitlines()[0]) == ("failed", "RuntimeError: boom")
    late = run_suite("demo", suite_of(hangs), RunContext(), limit=0.01)
    assert (late.status, late.error) == ("failed", "did not finish within 0.01s")
    inner = run_suite("demo", suite_of(waits_too_long_inside), RunContext(), limit=5)
    assert (inner.status, inner.error.splitlines()[0]) == (
        "failed",
        "TimeoutError: cluster not steady after 900s",
    )

    path = write_json(ok, tmp_path)
    data = json.loads(path.read_text())
    assert (path.name, data["suite"], data["mode"], data["status"]) == (
        "demo.json",
        "demo",
        "quick",
        "ok",
    )
    assert data["results"] == [one.to_json()]


def test_suite_run_json_keeps_foreign_output():
    run = SuiteRun("p", "plan", False, "2024-01-01T00:00:00+00:00", 1.5, {}, output={"x": 1})
    assert run.to_json()["output"] == {"x": 1}
    assert run.to_json()["mode"] == "full"


MAIN_ONLY_MODULE = """\"\"\"A plan benchmark that prints its own figures.\"\"\"

def main(argv=None):
    return {"argv": argv}
"""


def test_a_module_with_only_main_runs_through_the_adapter(tmp_path, monkeypatch):
    (tmp_path / "bench_main_only_demo.py").write_text(MAIN_ONLY_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    suite = load(SuiteEntry("demo", "bench_main_only_demo", optional=True))
    assert isinstance(suite, MainSuite)
    assert (suite.name, suite.description) == (
        "demo",
        "A plan benchmark that prints its own figures.",
    )
    run = run_suite("demo", suite, RunContext(quick=True), limit=5)
    assert (run.status, run.results, run.output) == ("ok", (), {"argv": ["--quick"]})


def test_load_failure_is_recorded():
    run = load_failure(SuiteEntry("x", "bench.x"), True, SyntaxError("bad"))
    assert (run.suite, run.status, run.error) == (
        "x",
        "failed",
        "could not load bench.x: SyntaxError: bad",
    )
