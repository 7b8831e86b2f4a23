"""A mailbox's Sieve script names its aliases (the vacation reply answers mail sent to any of them),
so any alias change, from whichever interface, publishes the script again."""
from django.db.models.signals import post_delete, post_save

from mailcore.mailboxes.models import Alias, Mailbox


def _republish(sender, instance: Alias, origin=None, **kwargs) -> None:
    from mailcore.webmail.filters import sieve_publish

    if origin is not None and getattr(origin, "model", type(origin)) is not Alias:
        return  # the mailbox (or its account) is being deleted: its script goes with it

    mailbox = Mailbox.objects.filter(pk=instance.mailbox_id).first()
    if mailbox is not None:
        sieve_publish(mailbox=mailbox)


def connect() -> None:
    post_save.connect(_republish, sender=Alias, dispatch_uid="webmail-alias-saved")
    post_delete.connect(_republish, sender=Alias, dispatch_uid="webmail-alias-deleted")
