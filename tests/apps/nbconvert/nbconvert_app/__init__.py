"""nbconvert renders a notebook to HTML (the `lab` template) and Markdown, with the templates
its wheel installs under sys.prefix/share/jupyter."""

import json
import os
import sys


def main():
    import nbformat
    from jupyter_core.paths import jupyter_path
    from nbconvert import HTMLExporter, MarkdownExporter

    nb = nbformat.v4.new_notebook()
    nb.metadata["language_info"] = {"name": "python", "pygments_lexer": "python3"}
    nb.cells = [
        nbformat.v4.new_markdown_cell("# Report\nSome *text*."),
        nbformat.v4.new_code_cell(
            "print(6 * 7)", outputs=[nbformat.v4.new_output("stream", text="42\n")]
        ),
    ]
    html, resources = HTMLExporter(template_name="lab").from_notebook_node(nb)
    markdown, _ = MarkdownExporter().from_notebook_node(nb)
    templates = os.path.join(sys.prefix, "share", "jupyter", "nbconvert", "templates")
    print(json.dumps({
        "doctype": html.startswith("<!DOCTYPE html>"),
        "heading": 'id="Report"' in html,
        "lab_css": ".jp-Notebook" in html,
        "highlighted": '<span class="nb">print</span>' in html,
        "output": "42" in html,
        "markdown": markdown.strip().splitlines()[:2],
        "prefix_is_executable": sys.prefix == sys.executable,
        "searched": templates in jupyter_path("nbconvert", "templates"),
        "templates": sorted(os.listdir(templates)),
    }))
