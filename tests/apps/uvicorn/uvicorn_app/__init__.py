"""uvicorn with `workers=2` serving a plain ASGI app (uvicorn_app.server) on 127.0.0.1 and the
port given as the only argument: the parent process (this one) supervises two worker processes
it spawns from the executable (multiprocessing's spawn start method: `sys.executable -c 'from
multiprocessing.spawn import spawn_main; ...' --multiprocessing-fork`), which import the app by
name. A request to /shutdown makes the worker that answers it send SIGTERM to the parent, which
stops the workers and exits."""

import sys


def main():
    import uvicorn

    port = int(sys.argv[1])
    uvicorn.run("uvicorn_app.server:app", host="127.0.0.1", port=port, workers=2,
                log_level="info", access_log=False)
