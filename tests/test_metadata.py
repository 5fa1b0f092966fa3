"""importlib.metadata for distributions carried in an archive."""

import importlib.metadata as metadata

import pytest

#: The fast tier (scripts/test --fast).
pytestmark = pytest.mark.fast


@pytest.fixture
def app(builder, tmp_path):
    builder.package("demo_pkg", "")
    builder.module("demo_pkg.cli", "def main():\n    return 'ran'\n")
    builder.dist_info(
        "demo_pkg-2.5.0.dist-info/METADATA",
        """\
        Metadata-Version: 2.1
        Name: demo-pkg
        Version: 2.5.0
        Summary: A demonstration
        Requires-Dist: click>=8
        Requires-Dist: rich ; extra == "fancy"
        """,
    )
    builder.dist_info(
        "demo_pkg-2.5.0.dist-info/entry_points.txt",
        """\
        [console_scripts]
        demo-ingot-tool = demo_pkg.cli:main
        """,
    )
    builder.dist_info(
        "demo_pkg-2.5.0.dist-info/RECORD",
        """\
        demo_pkg/__init__.py,sha256=x,0
        demo_pkg/cli.py,sha256=y,40
        demo_pkg-2.5.0.dist-info/METADATA,,
        """,
    )
    return builder.write(tmp_path / "meta.ingot")


def test_version_and_metadata(app, install):
    install(app)
    assert metadata.version("demo-pkg") == "2.5.0"
    assert metadata.version("demo_pkg") == "2.5.0"
    assert metadata.metadata("demo-pkg")["Summary"] == "A demonstration"


def test_requires(app, install):
    install(app)
    assert metadata.requires("demo-pkg") == ["click>=8", 'rich ; extra == "fancy"']


def test_entry_points_are_found_and_load_from_the_archive(app, install):
    install(app)
    (point,) = [
        ep for ep in metadata.entry_points(group="console_scripts") if ep.name == "demo-ingot-tool"
    ]
    assert point.value == "demo_pkg.cli:main"
    assert point.load()() == "ran"


def test_files_locate_and_read_from_the_archive(app, install):
    install(app)
    files = metadata.files("demo-pkg")
    by_name = {str(path): path for path in files}
    assert set(by_name) == {
        "demo_pkg/__init__.py",
        "demo_pkg/cli.py",
        "demo_pkg-2.5.0.dist-info/METADATA",
    }
    assert "return 'ran'" in by_name["demo_pkg/cli.py"].read_text()
    assert str(by_name["demo_pkg/cli.py"].locate()) == f"{app}/demo_pkg/cli.py"


def test_unknown_distribution_is_not_found(app, install):
    install(app)
    with pytest.raises(metadata.PackageNotFoundError):
        metadata.version("not-a-real-distribution-xyz")


def test_explicit_path_outside_the_archive_finds_nothing_from_it(app, install, tmp_path):
    finder = install(app)
    context = metadata.DistributionFinder.Context(name="demo-pkg", path=[str(tmp_path)])
    assert list(finder.find_distributions(context)) == []
    context = metadata.DistributionFinder.Context(name="demo-pkg", path=[str(app)])
    assert [dist.version for dist in finder.find_distributions(context)] == ["2.5.0"]
