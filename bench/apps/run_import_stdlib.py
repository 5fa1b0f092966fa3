"""shiv's entry point for the import_stdlib workload of bench/peers.py (shiv calls a function; the
workload, bench/import_stdlib.py, is module-level imports only): import it, which runs it."""


def main():
    import import_stdlib  # noqa: F401
