"""Hypothesis strategies for hostile field values, shared by every fuzzed RPC.

Values mix the boundaries that break code (0, -1, the int32/int64 extremes, empty, huge,
duplicated, unicode, path separators, names of things that exist) with plain random ones, so a
run reaches both the validation paths and the code behind them.
"""

from __future__ import annotations

from fuzz_harness import BASE_TOPIC
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

# Deterministic (make test must be repeatable), no example database written into the checkout,
# no per-example deadline (a call may legitimately wait for the controller).
FUZZ = settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def int32s() -> st.SearchStrategy[int]:
    edges = st.sampled_from([0, -1, -2, 1, 2, 3, 4, INT32_MAX, INT32_MIN, INT32_MAX - 1])
    return st.one_of(edges, st.integers(INT32_MIN, INT32_MAX))


def int64s() -> st.SearchStrategy[int]:
    edges = st.sampled_from([0, -1, 1, INT64_MAX, INT64_MIN, INT32_MAX + 1, 10**15])
    return st.one_of(edges, st.integers(INT64_MIN, INT64_MAX), int32s())


def small_ints() -> st.SearchStrategy[int]:
    """Counts and ids near the cluster's real ones (brokers 1-4, a few partitions)."""
    return st.one_of(st.integers(-3, 6), st.sampled_from([INT32_MAX, INT32_MIN, 1000, 100_000]))


HOSTILE_NAMES = [
    "",
    " ",
    ".",
    "..",
    "../evil",
    "../../evil",
    "a/b",
    "x/partitions/0/state",
    "no-such-topic",
    "a" * 249,
    "a" * 250,
    "b" * 5000,
    "ünïcødé",
    "🔥",
    "nul\x00byte",
    "tab\tname",
    "new\nline",
    "topic with space",
    "UPPER.lower_mixed-1",
    "fuzz.base",  # collides with fuzz-base in Kafka's metric names
    "__consumer_offsets",
    BASE_TOPIC,
]


def topic_names() -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from(HOSTILE_NAMES),
        st.text(max_size=40),
        st.from_regex(r"[a-zA-Z0-9._-]{1,30}", fullmatch=True),
    )


def texts() -> st.SearchStrategy[str]:
    return st.one_of(st.sampled_from(HOSTILE_NAMES), st.text(max_size=60))


def id_lists(max_size: int = 8) -> st.SearchStrategy[list[int]]:
    """Broker-id lists: empty, duplicated, negative, unknown, huge — or plausible."""
    return st.one_of(
        st.lists(small_ints(), max_size=max_size),
        st.lists(int32s(), max_size=max_size),
        st.just(list(range(1, 2000))),  # a huge list
        st.permutations([1, 2, 3]),
    )


# Topics the fuzz tests may create, change and delete; fuzz-base is never deleted or moved.
POOL = ("fz-a", "fz-b", "fz-c")


def mostly(valid: st.SearchStrategy, hostile: st.SearchStrategy) -> st.SearchStrategy:
    """Three times in four a plausible value, so whole requests get past validation often
    enough to reach the code behind it; otherwise a hostile one."""
    return st.one_of(valid, valid, valid, hostile)


def pool_topics() -> st.SearchStrategy[str]:
    return st.sampled_from(POOL)


def broker_sets() -> st.SearchStrategy[list[int]]:
    """Plausible replica lists: distinct live broker ids, 1 to 3 of them."""
    return st.lists(st.integers(1, 4), min_size=1, max_size=3, unique=True)
