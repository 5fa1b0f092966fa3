"""Time zones and locales from package data: babel formats a date and a number in German and
lists its locales, pytz and zoneinfo (tzdata) convert a time to Tokyo and New York, dateutil
parses a date and resolves a zone from its bundled tarball."""

import json
from datetime import datetime, timezone


def main():
    import babel
    import pytz
    from babel.dates import format_datetime
    from babel.localedata import locale_identifiers
    from babel.numbers import format_decimal
    from dateutil import parser, tz
    from dateutil.zoneinfo import get_zonefile_instance
    from zoneinfo import ZoneInfo, available_timezones

    moment = datetime(2024, 7, 1, 12, 30, tzinfo=timezone.utc)
    berlin = pytz.timezone("Europe/Berlin")
    print(json.dumps({
        "babel_date": format_datetime(moment.astimezone(berlin), "EEEE, d. MMMM y HH:mm", locale="de_DE"),
        "babel_number": format_decimal(1234567.891, locale="de_DE"),
        "babel_locales": len(locale_identifiers()) > 500,
        "babel_file": babel.__file__,
        "pytz": moment.astimezone(pytz.timezone("Asia/Tokyo")).isoformat(),
        "pytz_zones": len(pytz.all_timezones) > 400,
        "zoneinfo": moment.astimezone(ZoneInfo("America/New_York")).isoformat(),
        "zoneinfo_zones": "Europe/Paris" in available_timezones(),
        "dateutil": parser.parse("2024-07-01T12:30:00+02:00").astimezone(tz.UTC).isoformat(),
        "dateutil_zoneinfo": str(get_zonefile_instance().get("Australia/Sydney").utcoffset(
            datetime(2024, 7, 1))),
    }))
