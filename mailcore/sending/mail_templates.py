"""Saved templates: who may see them, and their writes."""
from django.db.models import Q, QuerySet

from mailcore.accounts.models import Account, User
from mailcore.errors import InvalidFields
from mailcore.sending.compose import header_problem
from mailcore.sending.models import MailTemplate

_EDITABLE = ("name", "subject", "body_html", "is_shared")


def template_visible(*, account: Account, user: User | None) -> QuerySet[MailTemplate]:
    """The account's shared templates plus the user's own; an API key acts as the user who made it."""
    mine = Q(created_by=user) if user is not None else Q(pk__in=[])
    return MailTemplate.objects.filter(Q(account=account) & (Q(is_shared=True) | mine))


def template_get(*, account: Account, user: User | None, template_id: int) -> MailTemplate:
    return template_visible(account=account, user=user).get(pk=template_id)


def _check(fields: dict) -> None:
    errors = {}
    if "name" in fields and not str(fields["name"]).strip():
        errors["name"] = ["name must not be blank"]
    if "body_html" in fields and not str(fields["body_html"]).strip():
        errors["body_html"] = ["body_html must not be blank"]
    if fields.get("subject") and (problem := header_problem(fields["subject"])):
        errors["subject"] = [problem]
    if errors:
        raise InvalidFields(errors)


def template_create(*, account: Account, created_by: User | None, name: str, body_html: str, subject: str = "",
                    is_shared: bool = False) -> MailTemplate:
    _check({"name": name, "body_html": body_html, "subject": subject})
    return MailTemplate.objects.create(account=account, created_by=created_by, name=name.strip(), subject=subject,
                                       body_html=body_html, is_shared=is_shared)


def template_update(*, template: MailTemplate, **changes) -> MailTemplate:
    changes = {field: value for field, value in changes.items() if field in _EDITABLE}
    _check(changes)
    for field, value in changes.items():
        setattr(template, field, value)
    if changes:
        template.save(update_fields=[*changes, "updated_at"])
    return template


def template_delete(*, template: MailTemplate) -> None:
    template.delete()
