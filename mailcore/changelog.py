"""Collections that sync clients follow (RFC 6578): a revision bumped by every change, whichever
path made it (REST, webmail, DAV, import), and a log holding, per resource, the revision of its
latest change, deletions included as tombstones. A sync token names a revision; the changes since
it are the log rows above it. One row per resource keeps the log as small as the collection."""
import hashlib

from django.db import IntegrityError, models, transaction
from django.db.models import F


class SyncedCollection(models.Model):
    revision = models.BigIntegerField(default=0, help_text="Bumped by every change of a resource in it.")
    slug = models.CharField(max_length=100, help_text="The collection's name in its DAV path (its URL segment).")
    is_default = models.BooleanField(default=False, help_text="The one a mailbox (or account) gets on first use; "
                                     "it keeps the original URL and cannot be deleted.")
    properties = models.JSONField(default=dict, blank=True,
                                  help_text="Dead properties sync clients set (Clark name -> XML), bounded.")

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


MAX_COLLECTIONS = 50  # calendars, or address books, of one mailbox (or of the account)
MAX_DEAD_PROPERTIES = 32  # per collection: what Apple, Thunderbird and DAVx5 set, many times over
MAX_DEAD_PROPERTY_BYTES = 4096  # a property's name and XML value together
MAX_SLUG = 100


def slug_valid(slug: str) -> bool:
    """A collection's URL segment: printable, no slash, not a dot segment, at most MAX_SLUG characters."""
    return 0 < len(slug) <= MAX_SLUG and "/" not in slug and slug not in (".", "..") and slug.isprintable() \
        and slug == slug.strip()


def dead_properties_refusals(collection: SyncedCollection, *, set_: dict[str, str],
                             remove: list[str]) -> dict[str, tuple[int, str]]:
    """Why each of these dead property changes cannot be stored: {name: (HTTP status, reason)}, empty
    when all can. A value over its bound is 507 (no room for it); past the count, every new one is 507."""
    refusals: dict[str, tuple[int, str]] = {}
    kept = {name for name in collection.properties if name not in remove}
    for name, value in set_.items():
        size = len(name.encode()) + len(value.encode())
        if size > MAX_DEAD_PROPERTY_BYTES:
            refusals[name] = (507, f"A property may be at most {MAX_DEAD_PROPERTY_BYTES} bytes (name and value); "
                                   f"this one is {size}.")
            continue
        kept.add(name)
        if len(kept) > MAX_DEAD_PROPERTIES:
            refusals[name] = (507, f"A collection keeps at most {MAX_DEAD_PROPERTIES} properties of clients.")
    return refusals


def dead_properties_update(collection: SyncedCollection, *, set_: dict[str, str], remove: list[str]) -> None:
    """Store these dead properties (checked with dead_properties_refusals first), drop the removed ones."""
    properties = {name: value for name, value in collection.properties.items() if name not in remove}
    properties.update(set_)
    collection.properties = properties
    collection.save(update_fields=["properties"])
