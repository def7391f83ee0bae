"""``leasehold``: the operator's command line (kafka-topics, kafka-reassign-partitions,
kafka-leader-election and console producer/consumer equivalents).

The top-level group is built by :func:`build_cli`; each module named in :data:`COMMAND_MODULES`
contributes its commands through a ``register(group)`` function. Adding a command family (e.g.
``leasehold pipeline``) is one module with ``register`` plus one entry in that tuple, or a call to
:func:`register_commands` with extra module names.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Sequence

import click

from leasehold import telemetry
from leasehold.cli.context import CliContext, CliFailure, ExitCode, exit_code_for
from leasehold.client.admin import DEFAULT_ADMIN
from leasehold.config import TlsConfig
from leasehold.errors import LeaseholdError

COMMAND_MODULES: tuple[str, ...] = (
    "leasehold.cli.topics",
    "leasehold.cli.reassign",
    "leasehold.cli.elect",
    "leasehold.cli.cluster",
    "leasehold.cli.produce",
    "leasehold.cli.consume",
    "services.pipeline.cli",
)


class LeaseholdGroup(click.Group):
    """Turns domain errors and failures into a message on stderr and the right exit code, and
    runs the command in one ``leasehold <command>`` span: every call it makes (metadata,
    produce, admin) joins that one trace."""

    def invoke(self, ctx: click.Context):
        with telemetry.span(command_name(self, [*getattr(ctx, "_protected_args", []), *ctx.args])):
            return self._invoke(ctx)

    def _invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except LeaseholdError as e:
            click.echo(f"Error: {e.message}", err=True)
            ctx.exit(int(exit_code_for(e)))
        except CliFailure as e:
            if e.message:
                click.echo(f"Error: {e.message}", err=True)
            ctx.exit(int(e.code))


def command_name(group: click.Group, words: Sequence[str]) -> str:
    """``leasehold topics create``: the command path the words name (arguments left out)."""
    names, cmd = ["leasehold"], group
    for word in words:
        sub = cmd.commands.get(word) if isinstance(cmd, click.Group) else None
        if sub is None:
            break
        names.append(word)
        cmd = sub
    return " ".join(names)


def register_commands(group: click.Group, modules: Iterable[str] = COMMAND_MODULES) -> None:
    """Import each module and let it add its commands to ``group``."""
    for name in modules:
        importlib.import_module(name).register(group)


def build_cli(extra_modules: Sequence[str] = ()) -> click.Group:
    @click.group(cls=LeaseholdGroup, context_settings={"help_option_names": ["-h", "--help"]})
    @click.option(
        "--admin",
        envvar="LEASEHOLD_ADMIN",
        default=DEFAULT_ADMIN,
        show_default=True,
        help="Admin service address (env LEASEHOLD_ADMIN).",
    )
    @click.option(
        "--output",
        "-o",
        type=click.Choice(["table", "json"]),
        default="table",
        show_default=True,
        help="Human tables, or JSON for scripts.",
    )
    @click.option("--tls-ca", envvar="LEASEHOLD_TLS_CA", default="", help="CA file for TLS.")
    @click.option("--tls-cert", envvar="LEASEHOLD_TLS_CERT", default="", help="Client cert.")
    @click.option("--tls-key", envvar="LEASEHOLD_TLS_KEY", default="", help="Client key.")
    @click.pass_context
    def cli(ctx: click.Context, admin: str, output: str, tls_ca: str, tls_cert: str, tls_key: str):
        """Leasehold: a Kafka-style replicated log whose controller runs on etcd."""
        tls = TlsConfig(cert=tls_cert, key=tls_key, ca=tls_ca) if tls_ca else None
        ctx.obj = CliContext(admin_address=admin, output=output, tls=tls)

    register_commands(cli, (*COMMAND_MODULES, *extra_modules))
    return cli


def main(argv: Sequence[str] | None = None) -> int:
    """Console-script entry point; returns the exit code. Traces go where ``OTEL_*`` says."""
    telemetry.setup_tracing("leasehold-cli")
    try:
        build_cli().main(args=list(argv) if argv is not None else None, prog_name="leasehold")
    except SystemExit as e:
        return int(e.code or 0)
    finally:
        telemetry.shutdown()
    return int(ExitCode.OK)


if __name__ == "__main__":
    raise SystemExit(main())
