"""Loading a log directory after a clean stop or a crash (Kafka's LogLoader).

Segments wholly below the recovery point were fsynced before it was recorded, so only their
tail state is rebuilt (from the last index entry). Everything from the recovery point on is
validated batch by batch — length, offsets, CRC — and cut at the first torn or corrupt batch;
once one segment has been cut, every later segment is garbage from the same crash and is
deleted. The result is the log as of its last whole valid batch.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path

from services.broker_agent.log.checkpoint import TMP_SUFFIX, fsync_dir
from services.broker_agent.log.handles import FileHandleCache
from services.broker_agent.log.segment import LOG_SUFFIX, SUFFIXES, LogSegment, segment_name

_LOGGER = logging.getLogger(__name__)
_SEGMENT_FILE = re.compile(r"^(\d{20})(\.log|\.index|\.timeindex)$")
# The log cleaner's files (``cleaner``): a cleaned segment being written, and one ready to
# replace the segments with base offsets in [first, end).
CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"
_SWAP_FILE = re.compile(r"^(\d{20})\.(\d{20})\.swap$")


def swap_name(base_offset: int, end_offset: int) -> str:
    return f"{segment_name(base_offset)}.{segment_name(end_offset)}{SWAP_SUFFIX}"


def complete_swaps(directory: Path, handles: FileHandleCache) -> int:
    """Finish what a crash interrupted in the cleaner (Kafka's LogLoader does the same with
    ``.cleaned`` and ``.swap`` files): a half-written cleaned segment is deleted; a swap file
    replaces every segment it covers. Returns how many swaps were completed."""
    swaps: list[tuple[int, int, Path]] = []
    for path in directory.iterdir():
        if path.name.endswith(CLEANED_SUFFIX):
            path.unlink(missing_ok=True)
        elif (match := _SWAP_FILE.match(path.name)) is not None:
            swaps.append((int(match.group(1)), int(match.group(2)), path))
    for first, end, swap in sorted(swaps):
        for path in directory.iterdir():
            match = _SEGMENT_FILE.match(path.name)
            if match is not None and first <= int(match.group(1)) < end:
                handles.close(path)
                path.unlink(missing_ok=True)
        target = directory / f"{segment_name(first)}{LOG_SUFFIX}"
        swap.replace(target)
        _LOGGER.warning(
            "completed an interrupted cleaner swap of segment %d of %s", first, directory
        )
    if swaps:
        fsync_dir(directory)
    return len(swaps)


@dataclass
class LoadedSegments:
    segments: list[LogSegment]
    bytes_truncated: int


def segment_base_offsets(directory: Path) -> list[int]:
    """Base offsets of the ``.log`` files, sorted; strays are removed on the way.

    Strays are checkpoint temp files from an interrupted write and index files whose log
    file is gone (a deletion interrupted half-way).
    """
    bases: set[int] = set()
    index_files: list[tuple[int, Path]] = []
    for path in directory.iterdir():
        if path.name.endswith(TMP_SUFFIX):
            path.unlink(missing_ok=True)
            continue
        match = _SEGMENT_FILE.match(path.name)
        if match is None:
            continue
        if match.group(2) == LOG_SUFFIX:
            bases.add(int(match.group(1)))
        else:
            index_files.append((int(match.group(1)), path))
    for base, path in index_files:
        if base not in bases:
            path.unlink(missing_ok=True)
    return sorted(bases)


def load_segments(
    directory: Path,
    handles: FileHandleCache,
    index_interval: int,
    recovery_point: int,
) -> LoadedSegments:
    complete_swaps(directory, handles)
    bases = segment_base_offsets(directory)
    segments: list[LogSegment] = []
    truncated = 0
    broken = False
    for i, base in enumerate(bases):
        if broken or (segments and base < segments[-1].next_offset):
            # Written after a torn batch, or overlapping its predecessor: not our log.
            _LOGGER.warning("deleting segment %d of %s after a torn tail", base, directory)
            for suffix in SUFFIXES:
                handles.close(directory / f"{segment_name(base)}{suffix}")
                (directory / f"{segment_name(base)}{suffix}").unlink(missing_ok=True)
            broken = True
            continue
        trusted = i + 1 < len(bases) and bases[i + 1] <= recovery_point
        recover_from = None if trusted else max(recovery_point, base)
        segment, cut = LogSegment.open(directory, base, handles, index_interval, recover_from)
        if cut:
            _LOGGER.warning("cut %d torn bytes from segment %d of %s", cut, base, directory)
            truncated += cut
            broken = True
        segments.append(segment)
    return LoadedSegments(segments, truncated)
