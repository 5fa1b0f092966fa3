"""invoke: commands run through a shell (`/bin/sh -c`), as task runners and configuration
management tools run them. One runs `sys.executable` with a script file and arguments: behind
the shell, the executable must be python running that script (a self-call through a shell),
not the application again. `invoke-app SCRIPT` prints what each command gave, as JSON."""

import json
import sys

from invoke import Config, Context


def main():
    script = sys.argv[1]
    context = Context(Config(overrides={"run": {"shell": "/bin/sh", "in_stream": False}}))
    child = context.run(f"{sys.executable} {script} one 'two words' && exit 0", hide=True)
    failed = context.run(f'{sys.executable} -c "import sys; sys.exit(3)"', hide=True, warn=True)
    streams = context.run("echo out && echo err >&2", hide=True)
    print(
        json.dumps(
            {
                "child": json.loads(child.stdout),
                "exited": failed.exited,
                "streams": [streams.stdout.strip(), streams.stderr.strip()],
            }
        )
    )
