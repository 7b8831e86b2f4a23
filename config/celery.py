"""Celery for production (REDIS_URL set); embedded mode runs tasks eagerly and sweeps in-process."""
import os

from celery import Celery
from celery.signals import task_postrun, task_prerun

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("config")
app.config_from_object("django.conf:settings", namespace="CELERY")
# Celery's Django fixup closes every database connection before and after each task unless told to
# reuse them: each batch of mail or webhooks then paid a new PostgreSQL connection (and lost its
# prepared statements). Connections are kept instead, and checked around each task as Django checks
# them around a request (closed when broken or older than CONN_MAX_AGE): see _check_connections.
app.conf.CELERY_DB_REUSE_MAX = 2**31
app.autodiscover_tasks()


@task_prerun.connect
@task_postrun.connect
def _check_connections(task=None, **kwargs) -> None:
    """Not for eager tasks (embedded mode): those run inside the caller's request or transaction."""
    if task is not None and getattr(task.request, "is_eager", False):
        return
    from django.db import close_old_connections

    close_old_connections()
