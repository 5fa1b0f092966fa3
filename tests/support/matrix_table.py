"""Renders the app matrix's report (tests/test_apps.py, $INGOT_MATRIX_REPORT) into the table
between `<!-- matrix:start -->` and `<!-- matrix:end -->` of a Markdown file; rows of apps the
report does not have are kept.

    python tests/support/matrix_table.py REPORT.json docs/compatibility.md
"""

import json
import re
import sys
from pathlib import Path

START, END = "<!-- matrix:start -->", "<!-- matrix:end -->"
HEADER = "| app | configuration | executable | build | result |\n|---|---|---|---|---|\n"
ROW = re.compile(r"^\| (?P<app>[\w-]+) \|")


def render(report: dict, previous: str) -> str:
    rows = {}
    for line in previous.splitlines():
        match = ROW.match(line)
        if match and match.group("app") != "app":
            rows[match.group("app")] = line
    for app, row in report.items():
        size = f"{row['size'] / 2**20:.1f} MiB" if "size" in row else "-"
        seconds = f"{row['build_seconds']:.0f} s" if "build_seconds" in row else "-"
        policy = row["policy"].replace("|", "\\|")
        rows[app] = f"| {app} | {policy} | {size} | {seconds} | {row['outcome']} |"
    passed = sum("| pass" in line for line in rows.values())
    zero = sum("| zero-config |" in line and "| pass" in line for line in rows.values())
    summary = f"\n{passed} of {len(rows)} apps pass; {zero} of them with no configuration at all.\n"
    return HEADER + "\n".join(rows[app] for app in sorted(rows)) + "\n" + summary


def main(report_path: str, markdown_path: str) -> int:
    report = json.loads(Path(report_path).read_text() or "{}")
    markdown = Path(markdown_path)
    text = markdown.read_text()
    if START not in text or END not in text:
        print(f"error: {markdown} has no {START} ... {END} section", file=sys.stderr)
        print("hint: add the two markers where the table goes", file=sys.stderr)
        return 2
    head, rest = text.split(START, 1)
    previous, tail = rest.split(END, 1)
    markdown.write_text(f"{head}{START}\n{render(report, previous)}{END}{tail}")
    print(f"wrote {len(report)} rows into {markdown}")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
