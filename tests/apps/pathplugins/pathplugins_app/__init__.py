"""Mechanisms a plugin system and its tools rely on (issue 37): the plugins are files of a
directory of the package, listed and then loaded by their path (importlib's
spec_from_file_location: SourceFileLoader reads through io.open_code); a configuration file
looked for in the package's "install directory" (dirname(__file__)/..); a self-call through a
shell (`shell=True`, as configuration tools run their modules); a frozen module of the
interpreter (__hello__)."""

import importlib.util
import json
import os
import subprocess
import sys

import click

HERE = os.path.dirname(os.path.abspath(__file__))


def plugins():
    directory = os.path.join(HERE, "plugins")
    found = {}
    for name in sorted(os.listdir(directory)):
        if name.endswith(".py"):
            spec = importlib.util.spec_from_file_location(f"plugin_{name[:-3]}", os.path.join(directory, name))
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            found[name[:-3]] = module
    return found


@click.command()
@click.argument("text")
def main(text):
    import __hello__

    seen = {name: module.run(text) for name, module in plugins().items()}
    try:
        open(os.path.join(os.path.dirname(HERE), "pathplugins.cfg"))
        config = "found"
    except FileNotFoundError:
        config = "FileNotFoundError"
    shell = subprocess.run(
        f"{sys.executable} -c 'import json, sys; print(json.dumps(sys.argv[1:]))' one two && true",
        shell=True, capture_output=True, text=True, timeout=60,
    )
    print(json.dumps({
        "plugins": seen,
        "config": config,
        "shell": [shell.returncode, shell.stdout.strip(), shell.stderr.strip()],
        "frozen_module": __hello__.__name__,
    }))
