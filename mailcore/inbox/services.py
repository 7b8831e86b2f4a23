"""Changes to a message a mailbox holds: flags, labels, folder."""
from django.core.exceptions import ValidationError

from mailcore.mailboxes.models import Label, Mailbox
from mailcore.store.factory import store_for


def message_update(
    *, mailbox: Mailbox, folder: str, uid: int, seen: bool | None = None, starred: bool | None = None,
    labels: list[int] | None = None, move_to: str | None = None,
) -> dict:
    """Apply flags and labels, then move if asked; returns where the message is now and its state."""
    account_labels = {label.pk: label for label in Label.objects.filter(account=mailbox.account_id)}
    if labels is not None:
        unknown = [label_id for label_id in labels if label_id not in account_labels]
        if unknown:
            raise ValidationError({"labels": [f"no label with id {label_id}" for label_id in unknown]})
    store = store_for(mailbox)
    current = store.fetch(folder, uid)
    label_keywords = {label.keyword for label in account_labels.values()}
    add, remove = (), ()
    if labels is not None:
        wanted = {account_labels[label_id].keyword for label_id in labels}
        add = tuple(sorted(wanted - set(current.flags)))
        remove = tuple(sorted((label_keywords & set(current.flags)) - wanted))
    if seen is not None or starred is not None or add or remove:
        store.set_flags(folder, uid, seen=seen, starred=starred, add_keywords=add, remove_keywords=remove)
    if move_to and move_to != current.folder:
        uid = store.move(folder, uid, move_to)
        folder = move_to
    now = store.fetch(folder, uid)
    return {
        "uid": now.uid,
        "folder": now.folder,
        "seen": now.seen,
        "starred": now.starred,
        "labels": sorted(label.pk for label in account_labels.values() if label.keyword in now.flags),
    }
