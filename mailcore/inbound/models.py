from django.db import models

from mailcore.accounts.models import Account


class ThreadIndex(models.Model):
    """Which thread a Message-ID belongs to, so that replies join the thread of the message they
    answer, and a new thread can be keyed by its normalised subject as the spec asks."""

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="+")
    message_id = models.CharField(max_length=998)
    thread_id = models.CharField(max_length=16)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["account", "message_id"], name="thread_index_unique_id")]
