"""What every ``leasehold`` command shares: the admin connection, output mode and exit codes.

Exit codes say what happened, so scripts can branch without parsing text:

==  ===========================================================================================
0   success
1   the operation failed (already exists, failed precondition, a per-partition error)
2   usage or invalid input (bad flags, bad JSON, INVALID_ARGUMENT from the service)
3   not found (unknown topic, partition, broker or operation)
4   unavailable or timed out (service unreachable, DEADLINE_EXCEEDED, not finished in time)
==  ===========================================================================================

Human output is rich tables on stdout; ``--output json`` prints one JSON document (or one per
line for streams) instead. Progress bars and spinners go to stderr, so stdout stays clean.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

import click
from rich.console import Console, RenderableType
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from leasehold import client_config
from leasehold.client.admin import SyncAdminClient
from leasehold.config import TlsConfig
from leasehold.errors import LeaseholdError


class ExitCode(IntEnum):
    OK = 0
    FAILED = 1
    USAGE = 2
    NOT_FOUND = 3
    UNAVAILABLE = 4


_BY_STATUS = {
    "INVALID_ARGUMENT": ExitCode.USAGE,
    "OUT_OF_RANGE": ExitCode.USAGE,
    "NOT_FOUND": ExitCode.NOT_FOUND,
    "UNAVAILABLE": ExitCode.UNAVAILABLE,
    "DEADLINE_EXCEEDED": ExitCode.UNAVAILABLE,
}


def exit_code_for(error: LeaseholdError) -> ExitCode:
    return _BY_STATUS.get(str(error.grpc_status), ExitCode.FAILED)


class CliFailure(Exception):
    """A command finished but did not succeed; the message is printed, the code returned."""

    def __init__(self, code: ExitCode, message: str = "") -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _console(stderr: bool = False) -> Console:
    stream = sys.stderr if stderr else sys.stdout
    width = None if stream.isatty() else 200
    return Console(file=stream, width=width, soft_wrap=not stream.isatty(), highlight=False)


@dataclass
class CliContext:
    admin_address: str
    output: str = "table"
    tls_ca: str = ""
    tls_cert: str = ""
    tls_key: str = ""
    insecure: bool = False
    # Resolved on first use from the options above, the environment and the client config file
    # (``leasehold.client_config``), so that ``--help`` and commands that call no service need
    # no TLS settings, and global options given after the subcommand still count.
    tls: TlsConfig | None = None
    _resolved: bool = field(default=False, repr=False)
    _admin: SyncAdminClient | None = field(default=None, repr=False)

    @property
    def json(self) -> bool:
        return self.output == "json"

    def resolve(self) -> None:
        """Fix the admin address and TLS (a ClientConfigError says what is wrong, in a line)."""
        if self._resolved:
            return
        found = client_config.resolve(
            admin=self.admin_address or None,
            ca=self.tls_ca,
            cert=self.tls_cert,
            key=self.tls_key,
            insecure=self.insecure,
        )
        self.admin_address, self.tls, self._resolved = found.admin, found.tls, True

    def admin(self) -> SyncAdminClient:
        """The admin client, created on first use and closed when the command ends."""
        if self._admin is None:
            self.resolve()
            self._admin = SyncAdminClient(self.admin_address, tls=self.tls)
            click.get_current_context().call_on_close(self.close)
        return self._admin

    def close(self) -> None:
        if self._admin is not None:
            self._admin.close()
            self._admin = None

    def emit(self, data: Any, render: Callable[[], RenderableType | str | None]) -> None:
        """Print ``data`` as JSON, or what ``render`` builds for people."""
        if self.json:
            click.echo(json.dumps(data, indent=2, sort_keys=False))
            return
        shown = render()
        if isinstance(shown, str):
            click.echo(shown)  # plain text: no rich markup, so "[1, 2]" prints as written
        elif shown is not None:
            _console().print(shown)

    def echo(self, text: str) -> None:
        """Plain text for people (Kafka tools' exact wording); suppressed in JSON mode."""
        if not self.json:
            click.echo(text)

    def note(self, text: str) -> None:
        """A remark on stderr, in either mode."""
        click.echo(text, err=True)

    @contextlib.contextmanager
    def progress(self, description: str, total: int | None) -> Iterator[Callable[[int], None]]:
        """A progress bar (or spinner without ``total``) on stderr; yields ``update(done)``."""
        columns = [TextColumn("{task.description}")]
        if total is not None:
            columns += [BarColumn(), MofNCompleteColumn()]
        columns.append(TimeElapsedColumn())
        with Progress(*columns, console=_console(stderr=True), transient=True) as bar:
            task = bar.add_task(description, total=total)
            yield lambda done: bar.update(task, completed=done)


def obj(ctx: click.Context | None = None) -> CliContext:
    return (ctx or click.get_current_context()).find_object(CliContext)  # type: ignore[return-value]


def parse_kv(values: tuple[str, ...], what: str) -> dict[str, str]:
    """``k=v`` pairs from repeated options; a missing '=' is a usage error."""
    out: dict[str, str] = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"expected key=value, got {item!r}", param_hint=what)
        out[key] = value
    return out


def parse_replica_assignment(text: str) -> dict[int, list[int]]:
    """Kafka's ``--replica-assignment``: partitions by ',', replicas by ':' (``1:2,2:3``)."""
    out: dict[int, list[int]] = {}
    for partition, group in enumerate(text.split(",")):
        try:
            out[partition] = [int(b) for b in group.split(":")]
        except ValueError:
            raise click.BadParameter(
                f"expected broker ids like 1:2,2:3, got {text!r}", param_hint="--replica-assignment"
            ) from None
    return out


def read_file(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError as e:
        raise CliFailure(ExitCode.USAGE, f"Cannot read {path}: {e.strerror}") from None
