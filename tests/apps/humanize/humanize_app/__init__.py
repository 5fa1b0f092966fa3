"""humanize in French: its gettext catalogs found through importlib.resources.as_file on its
package directory."""

import datetime as dt
import json


def main():
    import humanize

    english = humanize.naturaldelta(dt.timedelta(hours=3))
    humanize.i18n.activate("fr_FR")
    try:
        french = humanize.naturaldelta(dt.timedelta(hours=3))
        ordinal = humanize.ordinal(2)
    finally:
        humanize.i18n.deactivate()
    print(json.dumps({
        "english": english,
        "french": french,
        "ordinal": ordinal,
        "intcomma": humanize.intcomma(1234567),
        "size": humanize.naturalsize(3_000_000),
    }))
