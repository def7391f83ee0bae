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

from leasehold import client_config, telemetry
from leasehold.cli.context import CliContext, CliFailure, ExitCode, exit_code_for
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
        except client_config.ClientConfigError as e:
            click.echo(f"Error: {e}", err=True)
            ctx.exit(int(ExitCode.USAGE))
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
        default=None,
        help="Admin service address (env LEASEHOLD_ADMIN; else the client config file's, else "
        f"{client_config.DEFAULT_ADMIN}).",
    )
    @click.option(
        "--output",
        "-o",
        type=click.Choice(["table", "json"]),
        default="table",
        show_default=True,
        help="Human tables, or JSON for scripts.",
    )
    @click.option("--tls-ca", default="", help="CA file (env LEASEHOLD_TLS_CA).")
    @click.option("--tls-cert", default="", help="Client certificate (env LEASEHOLD_TLS_CERT).")
    @click.option("--tls-key", default="", help="Client key (env LEASEHOLD_TLS_KEY).")
    @click.option(
        "--insecure",
        is_flag=True,
        default=False,
        help="Plaintext, for a cluster started with --insecure (env LEASEHOLD_INSECURE=1).",
    )
    @click.pass_context
    def cli(
        ctx: click.Context,
        admin: str | None,
        output: str,
        tls_ca: str,
        tls_cert: str,
        tls_key: str,
        insecure: bool,
    ):
        """Leasehold: a Kafka-style replicated log whose controller runs on etcd.

        TLS settings come from the flags, else LEASEHOLD_TLS_* / LEASEHOLD_INSECURE, else the
        client config file (LEASEHOLD_CLIENT_CONFIG or ~/.config/leasehold/client.json, which
        make run writes).
        """
        ctx.obj = CliContext(
            admin_address=admin or "",
            output=output,
            settings=lambda: client_config.resolve(
                admin=admin, ca=tls_ca, cert=tls_cert, key=tls_key, insecure=insecure
            ),
        )

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
