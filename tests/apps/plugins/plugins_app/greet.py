import click


@click.command()
@click.argument("name")
@click.option("--shout", is_flag=True)
def command(name, shout):
    """Greets NAME."""
    text = f"Hello, {name}!"
    click.echo(text.upper() if shout else text)
