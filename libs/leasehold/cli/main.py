"""``leasehold``: the operator's command line (kafka-topics, kafka-reassign-partitions,
kafka-leader-election, kafka-consumer-groups and console producer/consumer equivalents).

The top-level group is built by :func:`build_cli`; each module named in :data:`COMMAND_MODULES`
contributes its commands through a ``register(group)`` function. Adding a command family (e.g.
``leasehold pipeline``) is one module with ``register`` plus one entry in that tuple, or a call to
:func:`register_commands` with extra module names.

The global options (:data:`GLOBAL_OPTIONS`: ``--admin``, ``-o/--output``, ``--tls-*``) may be
typed before the subcommand or after it, as kubectl and gh users type them
(``leasehold cluster describe -o json``): every command also takes them, unless it has an option
of that name of its own (``pipeline plan --output DIR``), and a value given there wins.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Sequence
from importlib import metadata

import click

from leasehold import client_config, telemetry
from leasehold.cli.context import CliContext, CliFailure, ExitCode, exit_code_for
from leasehold.errors import LeaseholdError

# (parameter name, flags, click type or None for a flag, help): the root group's options, also
# accepted after any subcommand.
GLOBAL_OPTIONS: tuple[tuple[str, tuple[str, ...], click.ParamType | None, str], ...] = (
    ("admin", ("--admin",), click.STRING, "Admin service address (env LEASEHOLD_ADMIN)."),
    ("output", ("--output", "-o"), click.Choice(["table", "json"]), "Human tables, or JSON."),
    ("tls_ca", ("--tls-ca",), click.STRING, "CA file for TLS (env LEASEHOLD_TLS_CA)."),
    ("tls_cert", ("--tls-cert",), click.STRING, "Client certificate (env LEASEHOLD_TLS_CERT)."),
    ("tls_key", ("--tls-key",), click.STRING, "Client key (env LEASEHOLD_TLS_KEY)."),
    ("insecure", ("--insecure",), None, "Plaintext (env LEASEHOLD_INSECURE=1)."),
)
# The CliContext field each global option sets (the others keep their option's name).
_CONTEXT_FIELDS = {name: name for name, *_ in GLOBAL_OPTIONS} | {"admin": "admin_address"}


def _version() -> str:
    try:
        return metadata.version("leasehold")
    except metadata.PackageNotFoundError:
        return "unknown"


COMMAND_MODULES: tuple[str, ...] = (
    "leasehold.cli.topics",
    "leasehold.cli.reassign",
    "leasehold.cli.elect",
    "leasehold.cli.cluster",
    "leasehold.cli.produce",
    "leasehold.cli.consume",
    "leasehold.cli.groups",
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


def _override(ctx: click.Context, param: click.Parameter, value: object) -> None:
    """A global option given after the subcommand: it replaces the root's value (a flag only
    when given)."""
    if value is not None and value is not False and param.name is not None:
        setattr(ctx.find_object(CliContext), _CONTEXT_FIELDS[param.name], value)


def accept_global_options(command: click.Command) -> None:
    """Let ``command`` and every command under it take the global options too."""
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            accept_global_options(sub)
        return
    taken = {o for p in command.params for o in getattr(p, "opts", ())}
    names = {p.name for p in command.params}
    for name, flags, type_, help_ in GLOBAL_OPTIONS:
        if name in names or taken.intersection(flags):
            continue  # the command's own option of that name wins
        kind = {"is_flag": True, "default": None} if type_ is None else {"type": type_}
        command.params.append(
            click.Option(flags, name, help=help_, expose_value=False, callback=_override, **kind)
        )


def build_cli(extra_modules: Sequence[str] = ()) -> click.Group:
    @click.group(cls=LeaseholdGroup, context_settings={"help_option_names": ["-h", "--help"]})
    @click.version_option(_version(), "--version", "-V", prog_name="leasehold")
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
        make run writes). Global options may also follow the subcommand (leasehold cluster
        describe -o json).
        """
        ctx.obj = CliContext(
            admin_address=admin or "",
            output=output,
            tls_ca=tls_ca,
            tls_cert=tls_cert,
            tls_key=tls_key,
            insecure=insecure,
        )

    register_commands(cli, (*COMMAND_MODULES, *extra_modules))
    accept_global_options(cli)
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
