"""jinja2 renders a page from templates in this package's own `templates/` directory, loaded
through jinja2.PackageLoader, with inheritance, a macro import, a filter and autoescaping."""

import json


def main():
    import markupsafe
    from jinja2 import Environment, PackageLoader, select_autoescape

    environment = Environment(loader=PackageLoader("jinja_app"),
                              autoescape=select_autoescape())
    environment.filters["pluralize"] = lambda count: "" if count == 1 else "s"
    page = environment.get_template("page.html").render(
        title="From memory", items=[("ingot", 3), ("<script>", 1)])
    print(json.dumps({"page": page, "templates": environment.list_templates(),
                      "speedups": markupsafe._speedups.__file__,
                      "escape": markupsafe.escape.__module__}))
