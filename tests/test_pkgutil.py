"""pkgutil listing of archived modules."""

import pkgutil

import pytest

#: The fast tier (scripts/test --fast).
pytestmark = pytest.mark.fast


@pytest.fixture
def app(builder, tmp_path):
    builder.package("walked", "")
    builder.module("walked.alpha", "")
    builder.package("walked.beta", "")
    builder.module("walked.beta.gamma", "")
    builder.module("lonely_module_xyz", "")
    return builder.write(tmp_path / "walk.ingot")


def test_iter_modules_lists_top_level_archived_modules(app, install):
    install(app)
    found = {(module.name, module.ispkg) for module in pkgutil.iter_modules()}
    assert ("walked", True) in found
    assert ("lonely_module_xyz", False) in found


def test_iter_modules_of_a_package_path(app, install):
    install(app)
    import walked

    assert [(module.name, module.ispkg) for module in pkgutil.iter_modules(walked.__path__)] == [
        ("alpha", False),
        ("beta", True),
    ]


def test_walk_packages_descends_into_subpackages(app, install):
    install(app)
    import walked

    names = [module.name for module in pkgutil.walk_packages(walked.__path__, "walked.")]
    assert names == ["walked.alpha", "walked.beta", "walked.beta.gamma"]
