"""The ``template-engine`` command: a thin adapter from arguments to the engine and back to text.

One module per command group; only this module puts them together, so none imports another's::

    options.py              what the commands share: options, --var, output formats, exit statuses
    compose_commands.py     preview, check, explain, validate
    diff_commands.py        diff, impact
    policy_commands.py      policy
    view_commands.py        report, schema, init
    service/commands.py     serve, db (the service is imported only when they run)
"""

from __future__ import annotations

import click

from template_engine.cli.compose_commands import check, explain_command, preview, validate
from template_engine.cli.diff_commands import diff, impact
from template_engine.cli.policy_commands import policy
from template_engine.cli.view_commands import init, report, schema
from template_engine.service.commands import db, serve

__all__ = ["main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="template-engine")
def main() -> None:
    """Compose layered Run:ai-style defaults, assets and templates into effective specs."""


main.add_command(preview)
main.add_command(check)
main.add_command(explain_command)
main.add_command(validate)
main.add_command(diff)
main.add_command(impact)
main.add_command(policy)
main.add_command(serve)
main.add_command(db)
main.add_command(report)
main.add_command(schema)
main.add_command(init)
