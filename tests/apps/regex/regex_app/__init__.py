"""regex (a C extension): Unicode properties, fuzzy matching, possessive quantifiers, beside
the standard library's re."""

import json
import re


def main():
    import regex

    print(json.dumps({
        "greek": regex.findall(r"\p{Greek}+", "alpha α beta βγ"),
        "fuzzy": bool(regex.fullmatch(r"(?:ingot){e<=1}", "ingat")),
        "possessive": regex.match(r"a++b", "aaab").group(),
        "graphemes": regex.findall(r"\X", "e\u0301a"),
        "stdlib": re.sub(r"(\w+)@(\w+)", r"\2 at \1", "user@host"),
        "module": regex.Pattern.__module__,
    }))
