"""Serializers: orjson (a Rust extension) with dataclasses and datetimes, msgpack's C
extension, tomlkit keeping a document's comments."""

import dataclasses
import datetime
import json


@dataclasses.dataclass
class Point:
    x: int
    y: float


def main():
    import msgpack
    import orjson
    import tomlkit

    data = {"point": Point(1, 2.5), "when": datetime.datetime(2024, 5, 6, 7, 8, 9), "n": [1, 2, 3]}
    dumped = orjson.dumps(data, option=orjson.OPT_SORT_KEYS)
    packed = msgpack.packb({"a": [1, 2, {"b": b"bytes"}]})
    document = tomlkit.parse('# settings\n[server]\nport = 8080  # the port\n')
    document["server"]["port"] = 9090
    print(json.dumps({
        "orjson": dumped.decode(),
        "msgpack": [packed.hex(), repr(msgpack.unpackb(packed))],
        "msgpack_c": msgpack.Packer.__module__,
        "toml": tomlkit.dumps(document),
    }))
