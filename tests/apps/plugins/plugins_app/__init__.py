"""A click group whose subcommands are plugins: entry points of the group
`plugins_app.commands`, found with importlib.metadata in the executable's archive and imported
by name only when loaded (no import names them)."""

import importlib.metadata

import click


@click.group()
def cli():
    """Plugins found through entry points."""


def main():
    for entry_point in importlib.metadata.entry_points(group="plugins_app.commands"):
        cli.add_command(entry_point.load(), entry_point.name)
    cli(prog_name="plugins-app")
