"""Python-Markdown: extensions named by string (`tables`, `fenced_code`, `codehilite`, `toc`),
which it loads through importlib.metadata entry points; code blocks highlighted by Pygments."""

import json


def main():
    import markdown

    text = ("# Title\n\n[TOC]\n\n## Part\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n"
            "```python\nprint('hi')\n```\n")
    html = markdown.markdown(text, extensions=["tables", "fenced_code", "codehilite", "toc"])
    print(json.dumps({
        "table": "<table>" in html and "<td>1</td>" in html,
        "toc": '<div class="toc">' in html,
        "highlighted": '<div class="codehilite">' in html and '<span class="nb">print</span>' in html,
        "heading": '<h1 id="title">Title</h1>' in html,
    }))
