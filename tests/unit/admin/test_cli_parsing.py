"""CLI behaviour that needs no server: argument parsing, usage errors and exit codes."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from leasehold.cli.context import (
    CliContext,
    CliFailure,
    ExitCode,
    exit_code_for,
    parse_kv,
    parse_replica_assignment,
)
from leasehold.cli.elect import parse_election_json
from leasehold.cli.main import (
    COMMAND_MODULES,
    accept_global_options,
    build_cli,
    register_commands,
)
from leasehold.errors import (
    AlreadyExistsError,
    InvalidRequestError,
    LeaseholdError,
    NotFoundError,
    PreconditionError,
    UnavailableError,
)


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (InvalidRequestError(42, "x"), ExitCode.USAGE),
        (NotFoundError(3, "x"), ExitCode.NOT_FOUND),
        (AlreadyExistsError(36, "x"), ExitCode.FAILED),
        (PreconditionError(-1, "x"), ExitCode.FAILED),
        (UnavailableError(8, "x"), ExitCode.UNAVAILABLE),
        (UnavailableError(7, "x", "DEADLINE_EXCEEDED"), ExitCode.UNAVAILABLE),
        (LeaseholdError(-1, "x", "INTERNAL"), ExitCode.FAILED),
    ],
)
def test_exit_code_for_each_status(error, code):
    assert exit_code_for(error) == code


@pytest.mark.parametrize(
    ("text", "expected"),
    [("1:2,2:3", {0: [1, 2], 1: [2, 3]}), ("5", {0: [5]}), ("3:1:2", {0: [3, 1, 2]})],
)
def test_kafka_replica_assignment_syntax(text, expected):
    assert parse_replica_assignment(text) == expected


@pytest.mark.parametrize("text", ["1:a", "1,,2", ""])
def test_bad_replica_assignment_is_a_usage_error(text):
    with pytest.raises(click.BadParameter):
        parse_replica_assignment(text)


def test_key_value_options():
    assert parse_kv(("a=1", "b=x=y", "c="), "--config") == {"a": "1", "b": "x=y", "c": ""}
    for bad in ("a", "=1"):
        with pytest.raises(click.BadParameter):
            parse_kv((bad,), "--config")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "Invalid JSON"),
        ("[]", "partitions"),
        ('{"partitions":[{"topic":"a"}]}', "string topic and an int partition"),
        ('{"partitions":[{"topic":"a","partition":"0"}]}', "string topic and an int partition"),
        ('{"partitions":[]}', "names no partitions"),
        (
            '{"partitions":[{"topic":"a","partition":0},{"topic":"a","partition":0}]}',
            "Replica election data contains duplicate partitions: a-0",
        ),
    ],
)
def test_election_file_errors(text, message):
    with pytest.raises(CliFailure) as err:
        parse_election_json(text)
    assert err.value.code == ExitCode.USAGE and message in err.value.message


def test_election_file():
    text = '{"partitions":[{"topic":"a","partition":1},{"topic":"b","partition":0}]}'
    assert parse_election_json(text) == [("a", 1), ("b", 0)]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["reassign"], "exactly one action"),
        (["reassign", "--generate", "--execute"], "exactly one action"),
        (["reassign", "--generate"], "--topics-to-move-json-file and --broker-list"),
        (["reassign", "--verify"], "--verify needs --reassignment-json-file"),
        (["elect", "--all-topic-partitions"], "choose --preferred or --unclean"),
        (["elect", "--preferred"], "exactly one of"),
        (["elect", "--preferred", "--all-topic-partitions", "--topic", "t"], "exactly one of"),
        (["elect", "--preferred", "--all-topic-partitions", "--partition", "1"], "--partition"),
        (["consume", "t", "--offset", "3"], "--offset needs --partition"),
        (["consume", "t", "--partition", "0", "--offset", "x"], "earliest, latest"),
        (["topics", "configs", "alter", "t"], "at least one of --set"),
        (["topics", "create"], "Missing argument"),
        (["--output", "yaml", "topics", "list"], "Invalid value for '--output'"),
    ],
)
def test_usage_errors_exit_2_before_any_call(args, message):
    # The admin address is a closed port: a usage error must never get as far as calling it.
    result = CliRunner().invoke(build_cli(), ["--admin", "127.0.0.1:1", *args])
    assert result.exit_code == ExitCode.USAGE, result.output
    assert message in result.output


def test_command_families_and_extension_point():
    cli = build_cli()
    assert set(cli.commands) == {
        "topics", "reassign", "elect", "cluster", "produce", "consume", "consumer-groups",
        "pipeline",
    }  # fmt: skip
    assert set(cli.commands["topics"].commands) == {
        "create", "delete", "describe", "list", "alter", "configs"
    }  # fmt: skip
    group = click.Group("empty")
    register_commands(group, COMMAND_MODULES[:1])
    assert list(group.commands) == ["topics"]


def _commands(command: click.Command, path: tuple[str, ...] = ()):
    yield path, command
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            yield from _commands(sub, (*path, name))


def test_every_command_and_option_has_a_help_line():
    for path, command in _commands(build_cli()):
        name = " ".join(("leasehold", *path))
        assert command.get_short_help_str(), f"{name} has no help line"
        for param in command.params:
            if isinstance(param, click.Option) and not param.hidden:
                assert param.help, f"{name} {param.opts[0]} has no help"


def test_global_options_work_after_the_subcommand_too(tmp_path):
    files = {name: tmp_path / name for name in ("ca", "cert", "key")}
    for path in files.values():
        path.write_text("-")  # read by the client when it connects, not by the CLI
    seen = {}
    cli = build_cli()

    @cli.command("probe")
    def probe() -> None:
        """Record what the global options came to."""
        ctx = click.get_current_context().find_object(CliContext)
        seen.update(
            admin=ctx.admin_address, output=ctx.output, ca=ctx.tls_ca, insecure=ctx.insecure
        )
        ctx.resolve()
        seen.update(tls=ctx.tls)

    accept_global_options(cli)
    tls = [f"--tls-{name}={path}" for name, path in files.items()]
    args = ["-o", "json", "--admin", "h:1", *tls]
    result = CliRunner().invoke(cli, ["probe", *args])
    assert result.exit_code == 0, result.output
    assert (
        seen["admin"] == "h:1" and seen["output"] == "json" and seen["tls"].ca == str(files["ca"])
    )
    result = CliRunner().invoke(cli, ["--output", "json", "probe"])
    assert result.exit_code == 0 and seen["output"] == "json"
    result = CliRunner().invoke(cli, ["probe", "--insecure"])
    assert result.exit_code == 0, result.output
    assert seen["insecure"] is True and not (seen["tls"] and seen["tls"].enabled)
    result = CliRunner().invoke(cli, ["--insecure", "probe"])
    assert result.exit_code == 0 and seen["insecure"] is True  # not reset by the absent flag
    result = CliRunner().invoke(cli, ["probe"])
    assert (seen["admin"], seen["output"], seen["ca"], seen["insecure"]) == ("", "table", "", False)
    # A command with an option of that name keeps its own: pipeline plan --output is a directory.
    plan = build_cli().commands["pipeline"].commands["plan"]
    assert [p for p in plan.params if "--output" in getattr(p, "opts", ())][0].name == "output"
    assert not any("-o" in getattr(p, "opts", ()) for p in plan.params)


def test_a_global_option_after_the_subcommand_reaches_the_command(monkeypatch):
    # The closed port is the one given after the subcommand, not the default: the call fails.
    result = CliRunner().invoke(
        build_cli(), ["cluster", "describe", "-o", "json", "--admin", "127.0.0.1:1"]
    )
    assert result.exit_code == ExitCode.UNAVAILABLE, result.output
    assert "127.0.0.1:1" in result.output
    assert "No such option" not in result.output


def test_version():
    result = CliRunner().invoke(build_cli(), ["--version"])
    assert result.exit_code == 0
    assert result.output.startswith("leasehold, version ")
