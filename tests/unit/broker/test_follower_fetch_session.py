"""The follower's half of a fetch session (Kafka's FetchSessionHandler): what each request
carries, and how answers and failures move the session on."""

from __future__ import annotations

from dataclasses import replace

import pytest

from services.broker_agent.follower.leader_endpoint import FetchSpec, FollowerSession
from services.broker_agent.model import Code, TopicPartition

A, B, C = (TopicPartition("t", p) for p in range(3))


def spec(tp: TopicPartition, offset: int = 0) -> FetchSpec:
    return FetchSpec(tp, offset, 5, 4, 0, 1 << 20)


def opened(*specs: FetchSpec, session_id: int = 42) -> FollowerSession:
    session = FollowerSession()
    session.answered(session.build(specs), Code.NONE, session_id)
    return session


def test_first_request_is_full_and_opens_the_session():
    session = FollowerSession()
    request = session.build([spec(A), spec(B)])
    assert (request.send, request.forgotten, request.session_id, request.epoch) == (
        [spec(A), spec(B)],
        [],
        0,
        0,
    )
    session.answered(request, Code.NONE, 42)
    assert (session.session_id, session.epoch, session.sent) == (
        42,
        1,
        {A: spec(A), B: spec(B)},
    )


@pytest.mark.parametrize(
    ("now", "send", "forgotten"),
    [
        # Nothing changed: an empty request.
        ([spec(A), spec(B), spec(C)], [], []),
        # A moved on; B's log start moved (an equal value built anew is not a change).
        ([spec(A, 7), replace(spec(B), log_start_offset=3), spec(C)],
         [spec(A, 7), replace(spec(B), log_start_offset=3)], []),
        # B is no longer fetched (delayed or removed), a new partition appears.
        ([spec(A), spec(C), spec(TopicPartition("u", 0))], [spec(TopicPartition("u", 0))], [B]),
        # Nothing at all.
        ([], [], [A, B, C]),
    ],
)  # fmt: skip
def test_incremental_requests_carry_only_changes(now, send, forgotten):
    session = opened(spec(A), spec(B), spec(C))
    request = session.build(now)
    assert (request.send, request.forgotten, request.session_id, request.epoch) == (
        send,
        forgotten,
        42,
        1,
    )
    session.answered(request, Code.NONE, 42)
    assert session.epoch == 2
    assert session.sent == {s.tp: s for s in now}


def test_an_equal_spec_built_anew_replaces_the_kept_one():
    session = opened(spec(A))
    fresh = spec(A)
    session.build([fresh])
    assert session.sent[A] is fresh


@pytest.mark.parametrize(
    ("error", "answer_id", "next_id"),
    [
        # The leader forgot the session (evicted, restarted): open a new one.
        (Code.FETCH_SESSION_ID_NOT_FOUND, 0, 0),
        # Out of step, or any other request error: close ours and open a new one.
        (Code.INVALID_FETCH_SESSION_EPOCH, 0, 42),
        (Code.UNKNOWN_SERVER_ERROR, 0, 42),
        # The leader closed it (answered without a session).
        (Code.NONE, 0, 0),
        # An answer for another session: start over, closing ours.
        (Code.NONE, 43, 42),
    ],
)
def test_errors_make_the_next_request_full(error, answer_id, next_id):
    session = opened(spec(A), spec(B))
    session.answered(session.build([spec(A, 3), spec(B)]), error, answer_id)
    request = session.build([spec(A, 3), spec(B)])
    assert (request.send, request.session_id, request.epoch) == ([spec(A, 3), spec(B)], next_id, 0)


def test_a_full_request_answered_without_a_session_stays_full():
    session = FollowerSession()
    session.answered(session.build([spec(A)]), Code.NONE, 0)
    request = session.build([spec(A)])
    assert (request.send, request.session_id, request.epoch) == ([spec(A)], 0, 0)


def test_reset_after_a_failed_call_closes_the_session_with_a_full_request():
    session = opened(spec(A))
    session.reset()
    request = session.build([spec(A)])
    assert (request.send, request.session_id, request.epoch, session.sent) == (
        [spec(A)],
        42,
        0,
        {},
    )


def test_the_same_list_again_is_an_empty_request_only_once_answered():
    session = opened(spec(A))
    specs = [spec(A, 5)]
    unanswered = session.build(specs)  # say the call was cancelled: never answered
    assert session.build(specs).send == unanswered.send == [spec(A, 5)]
    session.answered(session.build(specs), Code.NONE, 42)
    again = session.build(specs)
    assert (again.send, again.forgotten, again.epoch) == ([], [], 2)
    session.reset()
    assert session.build(specs).send == [spec(A, 5)]
