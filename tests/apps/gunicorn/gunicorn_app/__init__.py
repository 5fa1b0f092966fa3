"""gunicorn: its arbiter forks two sync workers from the executable (no exec); a request is
served by one of them, then SIGTERM stops everything gracefully."""

import json
import os
import signal
import socket
import sys
import time
import urllib.request


def wsgi(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [f"served by {os.getpid()} for {environ['PATH_INFO']}".encode()]


def serve(port):
    from gunicorn.app.base import BaseApplication

    class Application(BaseApplication):
        def load_config(self):
            for key, value in {
                "bind": f"127.0.0.1:{port}",
                "workers": 2,
                "worker_class": "sync",
                "loglevel": "warning",
                "graceful_timeout": 5,
                "control_socket_disable": True,
            }.items():
                if key in self.cfg.settings:
                    self.cfg.set(key, value)

        def load(self):
            return wsgi

    Application().run()


def main():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    arbiter = os.fork()
    if arbiter == 0:
        try:
            serve(port)
        finally:
            os._exit(0)
    body = None
    for _ in range(200):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/ingot", timeout=5) as response:
                body = response.read().decode()
            break
        except OSError:
            time.sleep(0.05)
    os.kill(arbiter, signal.SIGTERM)
    _, status = os.waitpid(arbiter, 0)
    worker = int(body.split()[2]) if body else None
    print(json.dumps({
        "body": body.split(" for ")[1] if body else None,
        "worker_is_child": worker is not None and worker not in (os.getpid(), arbiter),
        "arbiter_exit": os.waitstatus_to_exitcode(status),
    }))
    sys.stdout.flush()
