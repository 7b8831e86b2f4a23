from django.apps import AppConfig

from mailcore.sweep import Job


class ImportsConfig(AppConfig):
    """Large contact and calendar imports, run in the background with their progress."""

    name = "imports"
    verbose_name = "Imports"
    jobs = (Job("imports", "imports.services:imports_run_due", 1, drains=True),)
