"""The launch configuration `__ingot__/launch.json`, written by the build through
`ingot._ingot.launch_config_json`: the launcher's own definition (crates/ingot-importer/src/
launch.rs) checks it and writes it, byte for byte as `json.dumps` wrote it before."""

import json
import re

import pytest

from ingot._ingot import LAUNCH_CONFIG_VERSION, launch_config_json

#: The fast tier (scripts/test --fast).
pytestmark = pytest.mark.fast

FUNCTION = {"kind": "function", "module": "hello", "function": "main"}
MODULE = {"kind": "module", "module": "app"}

CONFIGS = [
    {"version": LAUNCH_CONFIG_VERSION, "run": FUNCTION},
    {"version": 1, "run": MODULE, "fast_exit": True},
    {"version": 1, "run": MODULE, "fast_exit": False, "filesystem_imports": False},
    {"version": 1, "run": FUNCTION, "filesystem_imports": True},
    {
        "version": 1,
        "run": FUNCTION,
        "runtime": "cpython-3.11.7-x86_64-glibc2.17",
        "fast_exit": True,
    },
    {
        "version": 1,
        "run": {"kind": "module", "module": "caf\u00e9.\U0001d49c"},
        "runtime": 'quoted "\\ \n\t\x7f\x01 \u2603 \U0001f600',
        "filesystem_imports": False,
    },
]


@pytest.mark.parametrize("config", CONFIGS)
def test_written_byte_for_byte_as_json_dumps_wrote_it(config):
    written = launch_config_json(config)
    assert written == (json.dumps(config, indent=2, sort_keys=True) + "\n").encode()
    assert json.loads(written) == config


@pytest.mark.parametrize(
    "config, message",
    [
        ({"version": 1, "run": MODULE, "fast_exits": False}, "not read `fast_exits`: false"),
        (
            {"version": 1, "run": dict(MODULE, function="main")},
            'not read `run.function`: "main"',
        ),
        ({"version": 1, "run": MODULE, "runtime": 5}, "not read `runtime`: 5"),
        ({"version": 1, "run": MODULE, "runtime": None}, "not read `runtime`: null"),
        (
            {"version": 1, "run": MODULE, "fast_exit": None},
            'expected a boolean at line 2 column 19: `"fast_exit": null,`',
        ),
        (
            {"version": 1, "run": MODULE, "filesystem_imports": "no"},
            '"no", expected a boolean at line 2 column 28: `"filesystem_imports": "no",`',
        ),
        ({"version": 2, "run": MODULE}, "version 2 is not supported"),
        ({"version": True, "run": MODULE}, "invalid type: boolean `true`, expected u32"),
        ({"version": 1.0, "run": MODULE}, "expected u32"),
        ({"version": 1}, "missing field `run`"),
        ({"version": 1, "run": {"kind": "script", "module": "a"}}, "unknown variant `script`"),
        (
            {"version": 1, "run": {"kind": "module", "module": "a..b"}},
            "`a..b` is not a Python name",
        ),
        ({"version": 1, "run": dict(FUNCTION, function="")}, "`` is not a Python name"),
        ({"version": 1, "run": MODULE, "fast_exit": object()}, "`fast_exit`: an object of type"),
        ({"version": 1, "run": {**MODULE, 3: 4}}, "`run`: the key 3 is not a str"),
        ({"version": 1, "run": MODULE, "runtime": "\ud800"}, "`runtime`: '\\ud800' is not UTF-8"),
    ],
)
def test_what_the_launcher_would_not_read_as_given_is_refused(config, message):
    with pytest.raises(ValueError, match=re.escape(message)) as raised:
        launch_config_json(config)
    assert str(raised.value).startswith("__ingot__/launch.json: ")
