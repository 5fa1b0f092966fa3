"""httpx: a GET over TLS to the URL given, verified against the CA file given (an SSL context
made from it), sync and async; certifi's bundle is where certifi says."""

import asyncio
import json
import os
import ssl
import sys


def main():
    import certifi
    import httpx

    url, ca = sys.argv[1], sys.argv[2]
    context = ssl.create_default_context(cafile=ca)
    with httpx.Client(verify=context) as client:
        answer = client.get(url + "/sync")

    async def fetch():
        async with httpx.AsyncClient(verify=context) as client:
            return await client.get(url + "/async")

    later = asyncio.run(fetch())
    try:
        httpx.get(url + "/untrusted", verify=ssl.create_default_context(cafile=certifi.where()))
        untrusted = "accepted"
    except httpx.ConnectError as error:
        untrusted = "CERTIFICATE_VERIFY_FAILED" in str(error)
    print(json.dumps({
        "sync": [answer.status_code, answer.json()],
        "async": [later.status_code, later.json()["path"]],
        "http_version": answer.http_version,
        "untrusted_refused": untrusted,
        "certifi_is_file": os.path.isfile(certifi.where()),
    }))
