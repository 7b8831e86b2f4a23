"""The Django project: settings, the root URLconf, the WSGI/ASGI entry points and the Celery app.
It sits on top of every app and no app imports it (an import-linter contract)."""
from config.celery import app as celery_app

__all__ = ["celery_app"]
