"""A tiny application served from an ingot archive."""

import importlib.metadata
import importlib.resources
import json


def main():
    greeting = json.loads(importlib.resources.files(__name__).joinpath("greeting.json").read_text())
    print(f"{greeting['text']} (hello {importlib.metadata.version('hello')} from {__file__})")
