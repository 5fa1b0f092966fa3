"""A plain ASGI application: every request is answered with JSON saying which process served it
(its pid, its parent's, sys.executable, where this module came from); /shutdown also sends
SIGTERM to the parent (uvicorn's supervisor) once the answer is sent."""

import json
import os
import signal
import sys


async def app(scope, receive, send):
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    if scope["type"] != "http":
        return
    body = json.dumps({"path": scope["path"], "pid": os.getpid(), "parent": os.getppid(),
                       "executable": sys.executable, "file": __file__}).encode()
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
    if scope["path"] == "/shutdown":
        os.kill(os.getppid(), signal.SIGTERM)
