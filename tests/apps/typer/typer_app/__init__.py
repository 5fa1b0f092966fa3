"""A typer CLI: two commands with typed arguments and options; help and usage errors
rendered by rich."""

import typer

app = typer.Typer(add_completion=False)


@app.command()
def hello(name: str, count: int = typer.Option(1, help="How many times.")):
    """Says hello to NAME."""
    for _ in range(count):
        typer.echo(f"Hello {name}")


@app.command()
def total(numbers: list[float]):
    """Adds NUMBERS."""
    typer.echo(f"{sum(numbers):g}")


def main():
    app(prog_name="typer-app")
