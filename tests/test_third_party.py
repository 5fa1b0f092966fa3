"""Acceptance: real packages from PyPI wheels, installed into a directory, packed, the directory
deleted, then imported and used from the archive alone."""

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from helpers import run_python

#: The fast tier (scripts/test --fast).
pytestmark = pytest.mark.fast

PACKAGES = ["rich", "click", "certifi", "jinja2", "pygments"]

APP_INIT = """
import importlib.resources
import jinja2

def _load(name):
    return importlib.resources.files(__name__).joinpath("templates", name).read_text()

environment = jinja2.Environment(loader=jinja2.FunctionLoader(_load), autoescape=True)

def render(**context):
    return environment.get_template("page.html").render(**context)
"""

# The same templates through jinja2's PackageLoader, which needs a real directory (or a
# zipimporter): the package is packed under the files policy.
FILES_APP_INIT = """
import jinja2

environment = jinja2.Environment(loader=jinja2.PackageLoader(__name__, "templates"), autoescape=True)

def render(**context):
    return environment.get_template("page.html").render(**context)
"""

USE_THEM = r"""
import json, sys, io, ingot
finder = ingot.install(sys.argv[1])
from importlib import metadata

import rich.console, rich.table
table = rich.table.Table(title="Fruit")
table.add_column("name"); table.add_column("count")
table.add_row("apple", "3")
console = rich.console.Console(file=io.StringIO(), width=40, color_system=None)
console.print(table)

import click
@click.command()
@click.option("--count", default=1, type=int)
def hello(count):
    click.echo("hi " * count)
try:
    hello.main(["--count", "2"], standalone_mode=False)
except SystemExit:
    pass

import certifi
pem = certifi.contents()

import pygments, pygments.lexers, pygments.formatters
highlighted = pygments.highlight("def f(): return 1", pygments.lexers.get_lexer_by_name("python"),
                                 pygments.formatters.HtmlFormatter())

import webapp, markupsafe
page = webapp.render(title="<Hi>", items=["a", "b"])
import filesapp
package_loader_page = filesapp.render(title="<Hi>", items=["a", "b"])

names = ["rich", "click", "certifi", "jinja2", "pygments", "markupsafe", "webapp", "markupsafe._speedups"]
print(json.dumps({
    "table": console.file.getvalue(),
    "certifi_where_matches": open(certifi.where()).read() == pem,
    "pem_ok": pem.count("BEGIN CERTIFICATE") > 50,
    "highlighted": highlighted,
    "page": page,
    "package_loader_page": package_loader_page,
    "filesapp_file": filesapp.__file__,
    "from_archive": {name: sys.modules[name].__spec__.loader is finder for name in names},
    "versions": {name: metadata.version(name) for name in ["rich", "click", "certifi", "jinja2", "pygments", "markupsafe"]},
    "console_scripts": sorted(ep.name for ep in metadata.entry_points(group="console_scripts")
                              if ep.dist is not None and ep.dist.name.lower() == "pygments"),
}))
"""


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    root = tmp_path_factory.mktemp("third-party")
    site = root / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-compile",
            "--only-binary",
            ":all:",
            "--target",
            str(site),
            *PACKAGES,
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    for name, init in (("webapp", APP_INIT), ("filesapp", FILES_APP_INIT)):
        app = root / "app" / name
        (app / "templates").mkdir(parents=True)
        (app / "__init__.py").write_text(textwrap.dedent(init))
        (app / "templates" / "page.html").write_text(
            "<h1>{{ title }}</h1><ul>{% for item in items %}<li>{{ item }}</li>{% endfor %}</ul>"
        )
    output = root / "deps.ingot"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "ingot",
            "pack",
            "--no-stdlib",
            "--path",
            str(site),
            "--path",
            str(root / "app"),
            "--files",
            "filesapp",
            "-o",
            str(output),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    shutil.rmtree(site)
    shutil.rmtree(root / "app")
    return output


@pytest.fixture(scope="module")
def report(archive):
    result = run_python(sys.executable, USE_THEM, archive)
    *printed, last = result.stdout.splitlines()
    report = json.loads(last)
    report["printed"] = printed
    return report


def test_packages_are_served_by_the_archive_after_their_directory_is_gone(report):
    assert report["from_archive"] == dict.fromkeys(report["from_archive"], True)


def test_rich_renders_a_table(report):
    assert "Fruit" in report["table"] and "apple" in report["table"] and "│" in report["table"]


def test_click_command_runs(report):
    assert report["printed"] == ["hi hi "]


def test_certifi_bundle_is_readable_from_the_archive_and_through_where(report):
    # certifi.where() goes through importlib.resources.as_file(), which copies the bundle to a
    # temporary file for the life of the process: a real path that OpenSSL can open.
    assert report["pem_ok"]
    assert report["certifi_where_matches"]


def test_pygments_highlights(report):
    assert '<span class="k">def</span>' in report["highlighted"]


def test_jinja2_renders_templates_read_through_importlib_resources(report):
    assert report["page"] == "<h1>&lt;Hi&gt;</h1><ul><li>a</li><li>b</li></ul>"


def test_jinja2_package_loader_renders_from_a_files_policy_package(report):
    assert report["package_loader_page"] == "<h1>&lt;Hi&gt;</h1><ul><li>a</li><li>b</li></ul>"
    assert report["filesapp_file"].startswith(os.environ["INGOT_CACHE_DIR"])


def test_metadata_versions_and_entry_points(report):
    assert set(report["versions"]) == {
        "rich",
        "click",
        "certifi",
        "jinja2",
        "pygments",
        "markupsafe",
    }
    assert all(version[0].isdigit() for version in report["versions"].values())
    assert report["console_scripts"] == ["pygmentize"]
