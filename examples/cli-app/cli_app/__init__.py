"""An ingot example: a click command that prints a rich table of the distributions it carries."""

import importlib.metadata
import sys

import click
from rich.console import Console
from rich.table import Table


@click.command()
@click.option("--title", default="cli-app", help="the table's title")
@click.option("--width", default=100, show_default=True, help="console width")
def cli(title: str, width: int) -> None:
    """Prints the name, version and summary of each distribution importlib.metadata finds."""
    table = Table(title=title)
    table.add_column("distribution", style="cyan")
    table.add_column("version", justify="right")
    table.add_column("summary")
    names = {dist.metadata["Name"]: dist for dist in importlib.metadata.distributions()}
    for name in sorted(names, key=str.lower):
        table.add_row(name, names[name].version, names[name].metadata["Summary"] or "")
    Console(width=width).print(table)
    click.echo(f"Python {sys.version_info[0]}.{sys.version_info[1]}, app from {__file__}")


def main() -> None:
    cli(prog_name="cli-app")
