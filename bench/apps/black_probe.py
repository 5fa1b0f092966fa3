"""Phase probe (bench/peers.py --probe): what black's console script does, with
CLOCK_MONOTONIC stamps written to stderr as one last line:

    probe <spawn_ns> <first_line_ns> <imported_ns> <main_done_ns>

argv: black_probe SPAWN_NS [--gc-off] BLACK_ARGS...; SPAWN_NS is the parent's time.monotonic_ns()
right before the spawn. --gc-off: the cyclic GC disabled during the imports, then gc.freeze()."""

import time

_T_START = time.monotonic_ns()

import sys  # noqa: E402


def main():
    spawn = sys.argv.pop(1)
    gc_off = sys.argv[1:2] == ["--gc-off"]
    if gc_off:
        import gc

        gc.disable()
        del sys.argv[1]
    from black import patched_main

    t_imported = time.monotonic_ns()
    if gc_off:
        gc.freeze()
        gc.enable()
    sys.argv[0] = "black"
    try:
        status = patched_main()
    except SystemExit as e:
        status = e.code
    t_main = time.monotonic_ns()
    sys.stdout.flush()
    sys.stderr.write(f"probe {spawn} {_T_START} {t_imported} {t_main}\n")
    sys.stderr.flush()
    sys.exit(status)


if __name__ == "__main__":
    main()
