"""attrs classes (slots, validators, converters, frozen) and cattrs structuring nested data
into them and unstructuring back."""

import json


def main():
    import attrs
    import cattrs

    @attrs.frozen
    class Address:
        city: str
        zip: str = attrs.field(validator=attrs.validators.matches_re(r"\d{5}"))

    @attrs.define
    class User:
        name: str
        age: int = attrs.field(converter=int)
        addresses: list[Address] = attrs.Factory(list)

    user = cattrs.structure({"name": "Ada", "age": "36",
                             "addresses": [{"city": "London", "zip": "12345"}]}, User)
    try:
        cattrs.structure({"name": "Bob", "age": 1, "addresses": [{"city": "X", "zip": "no"}]}, User)
        error = None
    except Exception as caught:
        error = type(caught).__name__
    print(json.dumps({
        "user": cattrs.unstructure(user),
        "repr": repr(user),
        "error": error,
        "slots": hasattr(User, "__slots__"),
        "fields": [field.name for field in attrs.fields(User)],
    }))
