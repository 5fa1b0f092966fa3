"""rich renders a table (plain) and markup with an emoji (truecolor ANSI) into strings."""

import io
import json


def main():
    import rich
    from rich.console import Console
    from rich.table import Table

    table = Table(title="Moons")
    table.add_column("planet")
    table.add_column("moons", justify="right")
    for planet, moons in [("Mercury", 0), ("Earth", 1), ("Mars", 2), ("Jupiter", 95)]:
        table.add_row(planet, str(moons))
    plain = Console(file=io.StringIO(), width=40, color_system=None, force_terminal=False)
    plain.print(table)
    color = Console(file=io.StringIO(), width=40, color_system="truecolor", force_terminal=True)
    color.print("[bold red]alert[/] :rocket: [link=https://example.org]link[/link]")
    print(json.dumps({"table": plain.file.getvalue(), "markup": color.file.getvalue(),
                      "file": rich.__file__}))
