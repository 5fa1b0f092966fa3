"""Sphinx builds a two-page site in French with the alabaster theme: templates, static files
and translations are read by path next to their modules."""

import json
import os
import tempfile


def main():
    from sphinx.cmd.build import build_main

    with tempfile.TemporaryDirectory() as work:
        source, out = os.path.join(work, "src"), os.path.join(work, "out")
        os.mkdir(source)
        with open(os.path.join(source, "conf.py"), "w") as conf:
            conf.write("project = 'Essai'\nlanguage = 'fr'\nhtml_theme = 'alabaster'\n")
        with open(os.path.join(source, "index.rst"), "w") as index:
            index.write("Essai\n=====\n\n.. toctree::\n\n   page\n\nVoir :ref:`genindex`.\n")
        with open(os.path.join(source, "page.rst"), "w") as page:
            page.write("Page\n====\n\n.. note:: Une note.\n\n.. code-block:: python\n\n   print(1)\n")
        status = build_main(["-q", "-b", "html", source, out])
        with open(os.path.join(out, "index.html"), encoding="utf-8") as html:
            index_html = html.read()
        with open(os.path.join(out, "page.html"), encoding="utf-8") as html:
            page_html = html.read()
        static = sorted(os.listdir(os.path.join(out, "_static")))
    print(json.dumps({
        "status": status,
        "french": 'lang="fr"' in index_html and "Recherche" in index_html,
        "note": "Note" in page_html and "Une note." in page_html,
        "highlighted": '<span class="nb">print</span>' in page_html,
        "theme_css": "alabaster.css" in static,
    }))
