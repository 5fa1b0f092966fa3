"""Django: `migrate` on an SQLite file (the contrib apps' migrations and this app's), an ORM
write and read, a view rendering an app template with {% translate %} in German, and Django's
own translations, through the test client."""

import io
import json
import os
import sys


def main():
    import django
    from django.conf import settings

    settings.configure(
        DEBUG=False,
        SECRET_KEY="matrix",
        ALLOWED_HOSTS=["testserver"],
        ROOT_URLCONF="django_app.urls",
        INSTALLED_APPS=["django.contrib.contenttypes", "django.contrib.auth",
                        "django_app.polls"],
        DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3",
                               "NAME": os.path.join(sys.argv[1], "db.sqlite3")}},
        TEMPLATES=[{"BACKEND": "django.template.backends.django.DjangoTemplates",
                    "APP_DIRS": True}],
        MIDDLEWARE=["django.middleware.locale.LocaleMiddleware"],
        USE_I18N=True,
        LANGUAGES=[("en", "English"), ("de", "German")],
        LANGUAGE_CODE="en",
        DEFAULT_AUTO_FIELD="django.db.models.BigAutoField",
    )
    django.setup()
    from django.core.management import call_command
    from django.test import Client
    from django.utils import translation

    out = io.StringIO()
    call_command("migrate", verbosity=1, stdout=out, no_color=True)
    from django_app.polls.models import Question
    Question.objects.create(text="Does it run from memory?")
    page = Client(HTTP_ACCEPT_LANGUAGE="de").get("/")
    with translation.override("fr"):
        french = str(translation.gettext("Yes"))
    print(json.dumps({
        "migrated": [line.strip() for line in out.getvalue().splitlines() if "Applying" in line],
        "page": [page.status_code, page.content.decode()],
        "french_yes": french,
        "questions": list(Question.objects.values_list("text", flat=True)),
    }))
