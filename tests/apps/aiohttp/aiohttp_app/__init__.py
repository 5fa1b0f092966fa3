"""aiohttp: a web server and a client in one asyncio loop, on loopback (C-accelerated parsers)."""

import asyncio
import json


async def run():
    import aiohttp
    from aiohttp import web

    async def hello(request):
        return web.json_response({"hello": request.match_info["name"], "q": request.query.get("q")})

    app = web.Application()
    app.router.add_get("/hello/{name}", hello)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    async with aiohttp.ClientSession() as session:
        async with session.get(f"http://127.0.0.1:{port}/hello/ingot?q=1") as response:
            body = await response.json()
            status = response.status
    await runner.cleanup()
    from aiohttp import http_parser

    return {"status": status, "body": body, "c_parser": http_parser.HttpRequestParser.__module__}


def main():
    print(json.dumps(asyncio.run(run())))
