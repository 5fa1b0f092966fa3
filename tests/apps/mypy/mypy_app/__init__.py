"""mypy (compiled by mypyc) type-checks a program: typeshed's stubs are read next to its
modules."""

import json


def main():
    from mypy import api

    program = "import os\nx: int = 'a'\nreveal_type(os.path.join('a', 'b'))\n"
    out, err, status = api.run(
        ["--config-file=", "--no-incremental", "--cache-dir=/dev/null", "--no-error-summary"]
        + ["-c", program]
    )
    print(json.dumps({
        "status": status,
        "lines": [line.split(": ", 1)[1] for line in out.splitlines()],
        "stderr": err,
        "compiled": api.__file__.endswith(".so"),
    }))
