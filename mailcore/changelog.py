"""Collections that sync clients follow (RFC 6578): a revision bumped by every change, whichever
path made it (REST, webmail, DAV, import), and a log holding, per resource, the revision of its
latest change, deletions included as tombstones. A sync token names a revision; the changes since
it are the log rows above it. One row per resource keeps the log as small as the collection."""
import hashlib

from django.db import IntegrityError, models, transaction
from django.db.models import F


class SyncedCollection(models.Model):
    revision = models.BigIntegerField(default=0, help_text="Bumped by every change of a resource in it.")

    class Meta:
        abstract = True


class ChangeRecord(models.Model):
    """Subclasses add `collection`, a foreign key to their SyncedCollection (related_name "changes")."""

    href = models.CharField(max_length=255)
    revision = models.BigIntegerField()
    deleted = models.BooleanField(default=False)

    class Meta:
        abstract = True


def collection_first_use(model: type[SyncedCollection], *, defaults: dict | None = None, **key) -> SyncedCollection:
    """The collection with this key, made on first use (two first uses at once both get the one row)."""
    try:
        with transaction.atomic():
            collection, _ = model.objects.get_or_create(defaults=defaults, **key)
    except IntegrityError:
        collection = model.objects.get(**key)
    return collection


def etag_of(text: str) -> str:
    """A strong entity tag of a resource's text (without the quotes HTTP puts around it)."""
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def change_record(collection: SyncedCollection, *, href: str, deleted: bool = False) -> int:
    """Bump the collection's revision and log this resource at it; call inside the writer's
    transaction (on PostgreSQL the UPDATE's row lock orders concurrent writers of one collection)."""
    model = type(collection)
    model.objects.filter(pk=collection.pk).update(revision=F("revision") + 1)
    collection.revision = model.objects.values_list("revision", flat=True).get(pk=collection.pk)
    log = collection.changes
    log.filter(href=href).delete()
    log.create(href=href, revision=collection.revision, deleted=deleted)
    return collection.revision


def changes_since(collection: SyncedCollection, revision: int) -> list[ChangeRecord]:
    """The resources changed after `revision`, oldest change first."""
    return list(collection.changes.filter(revision__gt=revision).order_by("revision"))
