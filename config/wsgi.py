import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_wsgi_application()


def _refuse_unsafe_production() -> None:
    """gunicorn's workers fail to boot (and gunicorn, then `manage.py serve`, stop) while a check
    of mailcore.checks fails in production."""
    from django.conf import settings
    from django.core.exceptions import ImproperlyConfigured

    from mailcore.checks import production_start_refused

    if settings.PRODUCTION and (reason := production_start_refused()):
        raise ImproperlyConfigured(reason)


_refuse_unsafe_production()
