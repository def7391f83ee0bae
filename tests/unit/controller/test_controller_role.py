"""``ControllerRole``: every transition from every phase, as a table."""

from __future__ import annotations

import pytest

from services.controller.core.role import ControllerRole, IllegalRoleTransition, Phase

P = Phase


def in_phase(phase: Phase, *, suspended_from: Phase = P.ACTIVE) -> ControllerRole:
    """A role brought to ``phase`` through legal transitions only."""
    role = ControllerRole()
    if phase is P.STANDBY:
        return role
    if phase is P.RESIGNED:
        role.resign()
        return role
    role.elected(7, 700, 1.5)
    if phase is P.ELECTING:
        return role
    if phase is P.SUSPENDED:
        if suspended_from is P.ACTIVE:
            role.activate()
        role.suspend()
        return role
    role.activate()
    return role


# (phase, transition) -> phase after, or an error
TRANSITIONS = [
    (P.STANDBY, "elected", P.ELECTING),
    (P.STANDBY, "activate", IllegalRoleTransition),
    (P.STANDBY, "suspend", P.STANDBY),
    (P.STANDBY, "resume", P.STANDBY),
    (P.STANDBY, "resign", P.RESIGNED),
    (P.STANDBY, "standby", IllegalRoleTransition),
    (P.ELECTING, "elected", IllegalRoleTransition),
    (P.ELECTING, "activate", P.ACTIVE),
    (P.ELECTING, "suspend", P.SUSPENDED),
    (P.ELECTING, "resign", P.RESIGNED),
    (P.ACTIVE, "elected", IllegalRoleTransition),
    (P.ACTIVE, "activate", IllegalRoleTransition),
    (P.ACTIVE, "suspend", P.SUSPENDED),
    (P.ACTIVE, "resume", P.ACTIVE),
    (P.ACTIVE, "resign", P.RESIGNED),
    (P.SUSPENDED, "elected", IllegalRoleTransition),
    (P.SUSPENDED, "suspend", P.SUSPENDED),
    (P.SUSPENDED, "resume", P.ACTIVE),
    (P.SUSPENDED, "resign", P.RESIGNED),
    (P.RESIGNED, "elected", IllegalRoleTransition),
    (P.RESIGNED, "suspend", P.RESIGNED),
    (P.RESIGNED, "resign", P.RESIGNED),
    (P.RESIGNED, "standby", P.STANDBY),
]


def _apply(role: ControllerRole, transition: str) -> None:
    if transition == "elected":
        role.elected(8, 800, 2.0)
    else:
        getattr(role, transition)()


@pytest.mark.parametrize(
    ("phase", "transition", "after"), TRANSITIONS, ids=[f"{p.value}-{t}" for p, t, _ in TRANSITIONS]
)
def test_transition(phase: Phase, transition: str, after) -> None:
    role = in_phase(phase)
    if after is IllegalRoleTransition:
        with pytest.raises(IllegalRoleTransition):
            _apply(role, transition)
        assert role.phase is phase
    else:
        _apply(role, transition)
        assert role.phase is after


def test_a_failover_run_while_suspended_stays_suspended_and_resumes_active() -> None:
    role = in_phase(P.SUSPENDED, suspended_from=P.ELECTING)
    assert role.electing and not role.in_office and role.pending_failover == (700, 1.5)
    assert role.activate() == 1.5
    assert role.phase is P.SUSPENDED and role.in_office and role.pending_failover is None
    assert role.resume() and role.phase is P.ACTIVE


# phase -> (in office, electing, holds the epoch, suspended)
READINGS = [
    (P.STANDBY, (False, False, False, False)),
    (P.ELECTING, (False, True, True, False)),
    (P.ACTIVE, (True, False, True, False)),
    (P.SUSPENDED, (True, False, True, True)),
    (P.RESIGNED, (False, False, False, False)),
]


@pytest.mark.parametrize(("phase", "expected"), READINGS, ids=[p.value for p, _ in READINGS])
def test_readings(phase: Phase, expected) -> None:
    role = in_phase(phase)
    assert (role.in_office, role.electing, role.holds_epoch, role.suspended) == expected


def test_generation_changes_on_activation_and_resignation_only() -> None:
    role = ControllerRole()
    role.elected(1, 10, 0.0)
    assert role.generation == 0
    role.activate()
    role.suspend()
    role.resume()
    assert role.generation == 1
    assert role.resign() is True
    assert role.generation == 2
    role.standby()
    assert role.resign() is False  # nothing held


def test_campaigns_number_the_election_terms() -> None:
    role = ControllerRole()
    assert (role.new_campaign(), role.new_campaign()) == (1, 2)
    assert role.campaign == 2
