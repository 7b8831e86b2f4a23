"""Portal forms: they parse what people type; the services decide what is allowed."""
from dataclasses import dataclass

from django import forms
from django.core.exceptions import ValidationError

from mailcore.events.catalog import EVENTS
from mailcore.netaddr import normalise_ip_list
from mailcore.webhooks.safety import UnsafeDestination, check_url_shape

EVENT_GROUPS = [
    ("email.", "Email"),
    ("mailbox.", "Mailboxes"),
    ("domain.", "Domains"),
    ("partner_", "Hosting partner"),
]


def _event_group(name: str) -> str:
    return next((label for prefix, label in EVENT_GROUPS if name.startswith(prefix)), "Other")


@dataclass
class EventGroup:
    label: str
    checkboxes: list
    for_partners: bool

    @property
    def any_checked(self) -> bool:
        return any(checkbox.data["selected"] for checkbox in self.checkboxes)


class WebhookEndpointForm(forms.Form):
    url = forms.URLField(
        label="Endpoint URL",
        max_length=2048,
        assume_scheme="https",
        help_text="An https URL on the public internet that accepts POST requests.",
        widget=forms.URLInput(attrs={"placeholder": "https://example.com/hooks/mailwell", "autocomplete": "off"}),
    )
    events = forms.MultipleChoiceField(
        label="Events",
        choices=list(EVENTS.items()),
        widget=forms.CheckboxSelectMultiple,
        error_messages={"required": "Choose at least one event."},
    )
    allowed_ips = forms.CharField(
        label="Allowed IP addresses",
        required=False,
        help_text="One address or CIDR range per line. Deliveries go only to these addresses; "
        "leave empty to allow any public address.",
        widget=forms.Textarea(attrs={"rows": 3, "placeholder": "203.0.113.10\n198.51.100.0/24", "spellcheck": "false"}),
    )

    # The service checks these again; asking the same functions here shows every error at once.
    def clean_url(self) -> str:
        try:
            check_url_shape(self.cleaned_data["url"])
        except UnsafeDestination as exc:
            raise ValidationError(str(exc)) from None
        return self.cleaned_data["url"]

    def clean_allowed_ips(self) -> list[str]:
        lines = [line.strip() for line in self.cleaned_data["allowed_ips"].splitlines() if line.strip()]
        try:
            normalise_ip_list(lines)
        except ValueError as exc:
            raise ValidationError(str(exc)) from None
        return lines

    def event_groups(self) -> list[EventGroup]:
        """The event checkboxes grouped by prefix, in catalog order within each group."""
        groups: dict[str, list] = {label: [] for _, label in EVENT_GROUPS}
        for checkbox in self["events"]:
            groups.setdefault(_event_group(checkbox.data["value"]), []).append(checkbox)
        return [EventGroup(label, boxes, for_partners=boxes[0].data["value"].startswith("partner_"))
                for label, boxes in groups.items() if boxes]


class WebhookEndpointActiveForm(forms.Form):
    is_active = forms.BooleanField(required=False, widget=forms.HiddenInput)
