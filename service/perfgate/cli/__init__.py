"""The `perfgate` command line: a click group with one module per command.

Commands are thin: parse options, call one library function, render. Library errors (the tree in
`perfgate.errors`) become one line on stderr and the exit code docs/architecture.md §7 gives them.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from perfgate import __version__
from perfgate.errors import PerfgateError


class PerfgateGroup(click.Group):
    """Turns a PerfgateError raised by any command into `error: ...` and its exit code."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except PerfgateError as exc:
            click.echo(f"error: {exc}", err=True)
            ctx.exit(exc.exit_code)


@click.group(
    cls=PerfgateGroup,
    context_settings={"help_option_names": ["-h", "--help"], "auto_envvar_prefix": "PERFGATE"},
)
@click.version_option(__version__, prog_name="perfgate")
def cli() -> None:
    """perfgate: catch performance regressions in PyTorch code before they merge.

    Run profiled benchmarks, keep every result in a SQL store, compare with sound statistics,
    and report on the pull request.
    """


def _register() -> None:
    # Imported here so `import perfgate.cli` stays light; each module adds one command.
    from perfgate.cli import (
        bisect,
        calibrate,
        changes,
        ci,
        comment,
        compare,
        config_cmd,
        db,
        demo,
        import_cmd,
        run,
        serve,
        token,
        trend,
        upload,
    )

    for module in (
        run,
        calibrate,
        upload,
        import_cmd,
        compare,
        bisect,
        comment,
        ci,
        config_cmd,
        trend,
        changes,
        serve,
        db,
        token,
        demo,
    ):
        cli.add_command(module.command)


_register()


def main() -> None:
    """Console-script entry point."""
    sys.exit(cli.main(prog_name="perfgate", standalone_mode=True))
