"""FastAPI: a JSON route with a pydantic body model, a validation error and the OpenAPI schema,
through starlette's TestClient (httpx, anyio)."""

import json


def main():
    import warnings
    # starlette 1.10 warns that its TestClient will move to httpx2 (on stderr, under python too).
    warnings.filterwarnings("ignore", message=".*httpx2")
    from fastapi import FastAPI
    from fastapi.testclient import TestClient
    from pydantic import BaseModel

    app = FastAPI(title="matrix")

    class Item(BaseModel):
        name: str
        price: float
        tags: list[str] = []

    @app.post("/items/{item_id}")
    def create(item_id: int, item: Item):
        return {"id": item_id, "item": item.model_dump(), "total": item.price * 2}

    client = TestClient(app)
    good = client.post("/items/7", json={"name": "ingot", "price": 2.5, "tags": ["a"]})
    bad = client.post("/items/x", json={"name": "ingot"})
    schema = client.get("/openapi.json").json()
    print(json.dumps({
        "good": [good.status_code, good.json()],
        "bad": [bad.status_code, sorted((e["loc"][-1], e["type"]) for e in bad.json()["detail"])],
        "paths": sorted(schema["paths"]),
        "title": schema["info"]["title"],
        "docs": client.get("/docs").status_code,
    }))
