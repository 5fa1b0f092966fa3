"""PyYAML through libyaml (yaml.CLoader / yaml.CDumper, the _yaml extension module), the rows
stored in an SQLite database file and summed there (sqlite3), and a TLS 1.3 handshake between a
client and a server context over memory BIOs, with a certificate chain given as files (ssl).

    yaml-app INVENTORY.yaml WORKDIR CERTDIR    (CERTDIR: ca.pem, server.pem, server.key)
"""

import json
import os
import sqlite3
import ssl
import sys


def tls_roundtrip(certs):
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(os.path.join(certs, "server.pem"), os.path.join(certs, "server.key"))
    client = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # verifies the peer and its host name
    client.load_verify_locations(cafile=os.path.join(certs, "ca.pem"))
    client.minimum_version = ssl.TLSVersion.TLSv1_3
    to_server, to_client = ssl.MemoryBIO(), ssl.MemoryBIO()
    from_client, from_server = ssl.MemoryBIO(), ssl.MemoryBIO()
    near = client.wrap_bio(to_client, from_client, server_hostname="127.0.0.1")
    far = server.wrap_bio(to_server, from_server, server_side=True)
    done = set()
    for _ in range(20):
        for side in (near, far):
            if side not in done:
                try:
                    side.do_handshake()
                    done.add(side)
                except ssl.SSLWantReadError:
                    pass
        to_server.write(from_client.read())
        to_client.write(from_server.read())
        if len(done) == 2:
            break
    near.write(b"ping over TLS")
    to_server.write(from_client.read())
    received = far.read()
    peer = dict(item for field in near.getpeercert()["subject"] for item in field)
    return {"version": near.version(), "cipher": near.cipher()[0], "received": received.decode(),
            "peer": peer.get("commonName"), "openssl": ssl.OPENSSL_VERSION}


def main():
    import yaml

    inventory, workdir, certs = sys.argv[1:4]
    with open(inventory, encoding="utf-8") as file:
        data = yaml.load(file, Loader=yaml.CLoader)
    database = os.path.join(workdir, "inventory.sqlite3")
    with sqlite3.connect(database) as connection:
        connection.execute("create table item (name text primary key, count integer, price real)")
        connection.executemany("insert into item values (:name, :count, :price)", data["items"])
    with sqlite3.connect(database) as connection:
        total = connection.execute("select sum(count), round(sum(count * price), 2), "
                                   "group_concat(name, ',') from item").fetchone()
    print(json.dumps({
        "with_libyaml": yaml.__with_libyaml__,
        "yaml_module": yaml._yaml.__file__,
        "loaded": data,
        "dumped": yaml.dump({"total": list(total)}, Dumper=yaml.CDumper, default_flow_style=True),
        "sqlite": [sqlite3.sqlite_version, list(total), os.path.getsize(database) > 0],
        "tls": tls_roundtrip(certs),
    }))
