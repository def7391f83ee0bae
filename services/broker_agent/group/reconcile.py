"""A member's way to its target assignment (Kafka's CurrentAssignmentBuilder, KIP-848).

Revoke before assign: a member first gives up the partitions its target no longer holds, at its
current epoch (UNREVOKED_PARTITIONS); only once its heartbeat shows it owns none of them does it
move to the target's epoch and get new partitions — those no other member still holds. What is
still held elsewhere it waits for (UNRELEASED_PARTITIONS), and gets on a later heartbeat once
released. So no partition is ever held by two members, and a member's epoch tells which target
it has reached.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from services.broker_agent.group.model import TP, Member, MemberState, Partitions


def reconcile(
    member: Member,
    target_epoch: int,
    target: Partitions,
    owned: Partitions | None,
    held_elsewhere: Callable[[TP], bool],
) -> Member:
    """The member after this heartbeat. ``owned``: what the member says it owns (None: not
    said, so it may still own anything it was given); ``held_elsewhere``: whether another
    member holds a partition (assigned or pending revocation)."""
    state = member.state
    if state == MemberState.UNREVOKED_PARTITIONS:
        if owned is None or owned & member.pending_revocation:
            return member  # still revoking
        return _next(member, target_epoch, target, owned, held_elsewhere)
    if state == MemberState.UNRELEASED_PARTITIONS or member.member_epoch != target_epoch:
        return _next(member, target_epoch, target, owned, held_elsewhere)
    return member


def _next(
    member: Member,
    target_epoch: int,
    target: Partitions,
    owned: Partitions | None,
    held_elsewhere: Callable[[TP], bool],
) -> Member:
    kept = member.assigned & target
    revoking = member.assigned - target
    if revoking and (owned is None or owned & revoking):
        # Stay at the current epoch until the member confirms the revocation.
        return replace(
            member,
            state=MemberState.UNREVOKED_PARTITIONS,
            assigned=kept,
            pending_revocation=revoking,
        )
    free = frozenset(tp for tp in target - kept if not held_elsewhere(tp))
    unreleased = bool(target - kept - free)
    moved = member.member_epoch != target_epoch
    return replace(
        member,
        state=MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE,
        previous_member_epoch=member.member_epoch if moved else member.previous_member_epoch,
        member_epoch=target_epoch,
        assigned=kept | free,
        pending_revocation=frozenset(),
    )
