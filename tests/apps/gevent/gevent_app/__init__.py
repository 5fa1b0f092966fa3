"""gevent: greenlets taking turns, and a StreamServer echoing to a gevent socket on loopback."""

import json


def main():
    import gevent
    from gevent import socket
    from gevent.server import StreamServer

    order = []

    def worker(name, delay):
        gevent.sleep(delay)
        order.append(name)
        return name.upper()

    jobs = [gevent.spawn(worker, name, delay) for name, delay in (("b", 0.02), ("a", 0.0))]
    gevent.joinall(jobs, timeout=5)

    def echo(connection, _address):
        data = connection.recv(1024)
        connection.sendall(b"echo:" + data)
        connection.close()

    server = StreamServer(("127.0.0.1", 0), echo)
    server.start()
    client = socket.create_connection(("127.0.0.1", server.server_port))
    client.sendall(b"ping")
    reply = client.recv(1024)
    client.close()
    server.stop()
    print(json.dumps({
        "order": order,
        "values": [job.value for job in jobs],
        "reply": reply.decode(),
        "hub": type(gevent.get_hub().loop).__module__,
    }))
