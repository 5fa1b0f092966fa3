"""shiv's entry point for the import_stdlib workload of bench/peers.py (shiv calls a function; the
workload, examples/import-stdlib/stdlib_modules.py, is module-level imports only): import it, which runs it."""


def main():
    import stdlib_modules  # noqa: F401
