"""gRPC: a server with the standard health service, and a client asking it over loopback."""

import json
from concurrent import futures


def main():
    import os

    # gRPC's C core logs a connection's GOAWAY at shutdown (INFO, on stderr) when the timing
    # makes one: only errors, as a service would configure it.
    os.environ.setdefault("GRPC_VERBOSITY", "ERROR")
    import grpc
    from grpc_health.v1 import health, health_pb2, health_pb2_grpc

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    servicer = health.HealthServicer()
    servicer.set("ingot", health_pb2.HealthCheckResponse.SERVING)
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        serving = stub.Check(health_pb2.HealthCheckRequest(service="ingot"), timeout=10)
        try:
            stub.Check(health_pb2.HealthCheckRequest(service="other"), timeout=10)
            missing = None
        except grpc.RpcError as error:
            missing = error.code().name
    server.stop(grace=None)
    print(json.dumps({
        "status": health_pb2.HealthCheckResponse.ServingStatus.Name(serving.status),
        "missing": missing,
        "version": grpc.__version__,
    }))
