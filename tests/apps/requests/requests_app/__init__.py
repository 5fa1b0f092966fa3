"""certifi's bundle (where() and its content) and requests: `requests-app URL CAFILE` GETs URL,
verifying the server against CAFILE, and prints the response."""

import json
import sys


def main():
    import certifi

    where = certifi.where()
    with open(where, encoding="ascii") as file:
        bundle = file.read()

    import requests

    url, cafile = sys.argv[1:3]
    response = requests.get(url, verify=cafile, timeout=30)
    print(json.dumps({
        "where": where, "certificates": bundle.count("-----BEGIN CERTIFICATE-----"),
        "same_as_contents": bundle == certifi.contents(),
        "default_bundle": requests.utils.DEFAULT_CA_BUNDLE_PATH,
        "status": response.status_code, "body": response.text,
        "content_type": response.headers.get("content-type"),
        "requests": requests.__version__,
    }))
