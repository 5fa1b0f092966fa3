"""pydantic v2: models validated (with coercion, nested models, constraints, a validator) and
serialized by pydantic_core, a compiled Rust extension module; a validation error reported."""

import json
from datetime import datetime

from pydantic import BaseModel, Field, TypeAdapter, ValidationError, field_validator


class Address(BaseModel):
    city: str
    zip: str = Field(pattern=r"^\d{5}$")


class User(BaseModel):
    id: int
    name: str = Field(min_length=1)
    signup: datetime
    tags: list[str] = []
    address: Address

    @field_validator("name")
    @classmethod
    def title_case(cls, value: str) -> str:
        return value.title()


def main():
    import pydantic
    import pydantic_core

    user = User.model_validate({"id": "42", "name": "ada lovelace",
                                "signup": "2024-05-06T07:08:09Z", "tags": ("math", "engines"),
                                "address": {"city": "London", "zip": "12345"}})
    try:
        User.model_validate({"id": "x", "name": "", "signup": "never",
                             "address": {"city": "Paris", "zip": "75"}})
    except ValidationError as error:
        errors = sorted((".".join(map(str, item["loc"])), item["type"]) for item in error.errors())
    print(json.dumps({
        "user": user.model_dump(mode="json"),
        "json": user.model_dump_json(),
        "errors": errors,
        "ints": TypeAdapter(list[int]).validate_json(b"[1, \"2\", 3]"),
        "schema_keys": sorted(User.model_json_schema()["properties"]),
        "versions": [pydantic.VERSION, pydantic_core.__version__],
        "core": pydantic_core._pydantic_core.__file__,
    }))
