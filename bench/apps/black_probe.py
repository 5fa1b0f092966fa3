"""Phase probe (bench/peers.py --probe): black's console script, then on stderr
`probe SPAWN START IMPORTED DONE` (CLOCK_MONOTONIC ns). argv: SPAWN [--gc-off] BLACK_ARGS...;
--gc-off: the cyclic GC off during the imports, then gc.freeze()."""

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
