"""The operator's quarantine: every mailbox's held messages with their reasons and symbols, released
or deleted through the same services as the owner's and the partner's; and the digest's runs, with
a warning when the daily digest has stopped."""
from django.contrib import admin, messages

from mailcore.errors import DomainError
from portal.console.sites import site
from protection.digest import digest_overdue
from protection.models import DigestRun, Quarantined
from protection.quarantine import QuarantineGone, quarantine_delete, quarantine_release


class WaitingFilter(admin.SimpleListFilter):
    title = "state"
    parameter_name = "state"

    def lookups(self, request, model_admin):
        return [("waiting", "Waiting"), ("released", "Released"), ("deleted", "Deleted")]

    def queryset(self, request, queryset):
        if self.value() == "waiting":
            return queryset.filter(released_at__isnull=True, deleted_at__isnull=True)
        if self.value() == "released":
            return queryset.filter(released_at__isnull=False)
        if self.value() == "deleted":
            return queryset.filter(deleted_at__isnull=False)
        return queryset


@admin.register(Quarantined, site=site)
class QuarantinedAdmin(admin.ModelAdmin):
    list_display = ["created_at", "mailbox", "from_header", "subject", "score", "why", "virus", "state"]
    list_filter = [WaitingFilter, "created_at"]
    search_fields = ["mailbox__address", "from_header", "envelope_from", "subject", "public_id"]
    list_select_related = ["mailbox"]
    exclude = ["raw"]
    readonly_fields = [field.name for field in Quarantined._meta.fields if field.name != "raw"]
    actions = ["release", "release_and_allow", "delete_held"]
    date_hierarchy = "created_at"
    list_per_page = 50

    def get_queryset(self, request):
        return super().get_queryset(request).defer("raw")

    def has_add_permission(self, request) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False  # "Delete held message" keeps the record; the retention removes rows

    @admin.display(description="Why")
    def why(self, item: Quarantined) -> str:
        return "; ".join(item.reasons)

    @admin.display(description="State")
    def state(self, item: Quarantined) -> str:
        return "released" if item.released_at else "deleted" if item.deleted_at else "waiting"

    def _each(self, request, queryset, act, done: str):
        for item in queryset:
            try:
                act(item)
            except QuarantineGone:
                self.message_user(request, f"{item.public_id}: already released or deleted.", messages.WARNING)
            except DomainError as error:
                self.message_user(request, f"{item.public_id}: {error.detail}", messages.ERROR)
            else:
                self.message_user(request, f"{item.public_id} ({item.mailbox.address}): {done}.")

    @admin.action(description="Release to the Inbox")
    def release(self, request, queryset):
        self._each(request, queryset, lambda item: quarantine_release(
            item=item, by=f"operator {request.user.email}"), "released to the Inbox")

    @admin.action(description="Release and allow the sender for the mailbox")
    def release_and_allow(self, request, queryset):
        self._each(request, queryset, lambda item: quarantine_release(
            item=item, by=f"operator {request.user.email}", allow_sender=True), "released, sender allowed")

    @admin.action(description="Delete held message")
    def delete_held(self, request, queryset):
        self._each(request, queryset, lambda item: quarantine_delete(
            item=item, by=f"operator {request.user.email}"), "deleted")


@admin.register(DigestRun, site=site)
class DigestRunAdmin(admin.ModelAdmin):
    list_display = ["started_at", "finished_at", "digests_sent", "messages_listed", "failures", "problem"]
    list_per_page = 50

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False

    def changelist_view(self, request, extra_context=None):
        if digest_overdue():
            self.message_user(request, "No quarantine digest run finished in the last two days: the worker's "
                              "quarantine-digest job is not running (see the worker's log).", messages.WARNING)
        return super().changelist_view(request, extra_context)
