"""A ThreadingHTTPServer under load, for its peak RSS (bench/workloads.toml, http-server): 16
client threads send 100 requests each to a JSON handler; prints ``ok`` if every answer was
right."""

import http.client
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CLIENTS, REQUESTS = 16, 100


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"path": self.path, "items": list(range(50))}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def client(port, failures):
    for index in range(REQUESTS):
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        connection.request("GET", f"/item/{index}")
        response = connection.getresponse()
        if response.status != 200 or len(json.loads(response.read())["items"]) != 50:
            failures.append(index)
        connection.close()


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    failures = []
    port = server.server_address[1]
    clients = [threading.Thread(target=client, args=(port, failures)) for _ in range(CLIENTS)]
    for thread in clients:
        thread.start()
    for thread in clients:
        thread.join()
    server.shutdown()
    print("ok" if not failures else f"{len(failures)} requests failed")


if __name__ == "__main__":
    main()
