"""`perfgate changes`: change points detected on a branch."""

from __future__ import annotations

import click

from perfgate import json_text
from perfgate.cli.options import db_option, format_option


@click.command("changes")
@click.option(
    "--status",
    type=click.Choice(["open", "acknowledged", "dismissed", "all"]),
    default="open",
    show_default=True,
    help="Which change points to list.",
)
@click.option("--branch", default="main", show_default=True, help="Branch to look at.")
@click.option(
    "--metric",
    default="time",
    show_default=True,
    help="Metric whose change points to list ('all': every metric).",
)
@click.option("--project", help="Project [default: the only one in the store].")
@format_option("table", "json", default="table")
@db_option
def command(
    *, status: str, branch: str, metric: str, project: str | None, fmt: str, db_url: str
) -> None:
    """List change points (lasting shifts in a benchmark's history) on a branch.

    Change points are detected when runs are stored (`perfgate upload`, `perfgate run`); this
    only reads them.
    """
    from perfgate.store.connect import open_store
    from perfgate.store.trends import list_changes

    with open_store(db_url) as store, store.sessions() as session:
        changes = list_changes(
            session,
            project=project,
            branch=branch,
            metric=None if metric == "all" else metric,
            status=None if status == "all" else status,
        )
    if fmt == "json":
        click.echo(
            json_text.dumps(
                {"change_points": [c.as_json() for c in changes]},
                indent=1,
            )
        )
        return
    if not changes:
        click.echo(
            f"no {status if status != 'all' else ''} change points on {branch}".replace("  ", " ")
        )
        return
    for c in changes:
        click.echo(
            f"{c.time:%Y-%m-%d %H:%M}  {c.commit[:10]}  {c.ratio - 1:+7.1%}  "
            f"{c.status:12s} {c.key} ({c.metric})"
        )
