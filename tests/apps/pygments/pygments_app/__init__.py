"""pygments highlights the file named by argv[1]: the lexer found by its file name (through
pygments' lexer mapping), HTML with the default style's CSS, and 256-colour terminal output."""

import json
import sys


def main():
    import pygments
    from pygments import highlight
    from pygments.formatters import HtmlFormatter, Terminal256Formatter
    from pygments.lexers import get_lexer_for_filename

    path = sys.argv[1]
    with open(path, encoding="utf-8") as file:
        code = file.read()
    lexer = get_lexer_for_filename(path, code)
    html = HtmlFormatter(style="default", cssclass="code")
    print(json.dumps({
        "lexer": lexer.name,
        "html": highlight(code, lexer, html),
        "css": html.get_style_defs(".code"),
        "terminal": highlight(code, lexer, Terminal256Formatter(style="monokai")),
        "file": pygments.__file__,
    }))
