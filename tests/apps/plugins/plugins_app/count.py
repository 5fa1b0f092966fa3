import importlib.metadata

import click


@click.command()
def command():
    """Says which distribution provides the plugins, and how many there are."""
    found = importlib.metadata.entry_points(group="plugins_app.commands")
    dist = importlib.metadata.distribution("plugins-app")
    click.echo(f"{len(found)} plugins from {dist.metadata['Name']} {dist.version}")
