"""The partner realm's forms: they parse what people type; the services decide what is allowed.
PortalForm and the mailbox forms the webmail shares are in portal.forms."""
from dataclasses import dataclass

from django import forms
from django.core.exceptions import ValidationError

from mailcore.errors import InvalidFields
from mailcore.events.catalog import EVENTS
from mailcore.ipnets import normalise_ip_list
from mailcore.webhooks.safety import UnsafeDestination, check_url_shape
from portal.forms import PortalForm

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


# Mailboxes and settings (appended: imports kept with the code that uses them)

from datetime import timedelta  # noqa: E402
from decimal import Decimal  # noqa: E402

from mailcore.accounts.models import Plan  # noqa: E402
from mailcore.partners.models import HostingPartner, LapseAction, PartnerClient  # noqa: E402
from mailcore.domains.models import Domain  # noqa: E402
from mailcore.domains.services import InvalidDomainName, domain_name_clean  # noqa: E402
from mailcore.apikeys.scopes import PARTNER_SCOPES, USER_SCOPES  # noqa: E402
from mailcore.partners.mailboxes import PARTNER_PLANS  # noqa: E402


def storage_label(mb: int) -> str:
    """`20 GB` for whole gigabytes, else `512 MB`."""
    return f"{mb // 1024} GB" if mb >= 1024 and mb % 1024 == 0 else f"{mb} MB"


def _lines(value: str) -> list[str]:
    return [line.strip() for line in value.splitlines() if line.strip()]


def _ip_lines(value: str) -> list[str]:
    lines = _lines(value)
    try:
        normalise_ip_list(lines)
    except ValueError as exc:
        raise ValidationError(str(exc)) from None
    return lines


# Mailboxes


class MailboxFilterForm(forms.Form):
    """The list's filters; choices come from the partner's own clients and domains."""

    status = forms.ChoiceField(label="Status", required=False)
    client = forms.TypedChoiceField(label="Client", required=False, coerce=int, empty_value=None)
    domain = forms.TypedChoiceField(label="Domain", required=False, coerce=int, empty_value=None)

    def __init__(self, data, *, clients, domains, statuses):
        super().__init__(data)
        self.fields["status"].choices = [("", "All statuses"), *statuses]
        self.fields["client"].choices = [("", "All clients"), *((client.pk, client.name) for client in clients)]
        self.fields["domain"].choices = [("", "All domains"), *((domain.pk, domain.name) for domain in domains)]

    def filters(self) -> dict:
        """The valid filters that are set; an unknown value is ignored, as an empty one."""
        self.is_valid()
        return {name: self.cleaned_data[name] for name in self.fields
                if name not in self.errors and self.cleaned_data.get(name)}


SLOT, PAY_AS_YOU_GO = "slot", "pay_as_you_go"


class ChoiceRadioSelect(forms.RadioSelect):
    """Radio buttons some of whose values are shown but cannot be chosen (disabled_values)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.disabled_values: set[str] = set()

    def create_option(self, name, value, label, selected, index, subindex=None, attrs=None):
        option = super().create_option(name, value, label, selected, index, subindex, attrs)
        if str(value) in self.disabled_values:
            option["attrs"]["disabled"] = True
        return option


class PartnerMailboxForm(PortalForm):
    domain = forms.TypedChoiceField(label="Domain", coerce=int, error_messages={"required": "Choose a domain."})
    local_part = forms.CharField(
        label="Address",
        max_length=64,
        help_text="Letters, digits and . _ + - before the @. Only verified domains can have mailboxes.",
        widget=forms.TextInput(attrs={"autocomplete": "off", "autocapitalize": "none", "spellcheck": "false",
                                      "placeholder": "ann"}),
    )
    password = forms.CharField(
        label="Password",
        strip=False,
        help_text="At least 8 characters. Give it to the mailbox's owner; you can't see it again.",
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
    )
    plan_id = forms.ChoiceField(
        label="Plan",
        initial="pro",
        widget=forms.RadioSelect,
    )
    display_name = forms.CharField(
        label="Display name",
        required=False,
        max_length=200,
        help_text="The name recipients see, such as “Ann Smith”.",
        widget=forms.TextInput(attrs={"autocomplete": "off"}),
    )
    funding_mode = forms.ChoiceField(
        label="Paid by",
        initial=SLOT,
        required=False,  # absent: a slot, as before pay-as-you-go existed
        choices=[(SLOT, "Slot from the pool"), (PAY_AS_YOU_GO, "Pay-as-you-go (your customer pays you)")],
        widget=ChoiceRadioSelect,
    )

    def __init__(self, data=None, *, domains, retail_prices=None, **kwargs):
        """retail_prices: the partner's price per plan code in its billing currency (Money), for pay-as-you-go."""
        super().__init__(data, **kwargs)
        plans = Plan.objects.filter(code__in=PARTNER_PLANS).order_by("rank")
        self.fields["plan_id"].choices = [(plan.code, plan.name) for plan in plans]
        self.plan_details = {plan.code: f"{storage_label(plan.storage_mb)} storage · {plan.sends_per_day:,} sends a day"
                             for plan in plans}
        groups: dict[str, list] = {}
        for domain in domains:
            label = domain.name if domain.is_verified else f"{domain.name} (not verified)"
            groups.setdefault(domain.client.name if domain.client else "No client", []).append((domain.pk, label))
        self.fields["domain"].choices = [("", "Choose a domain…"), *groups.items()]
        self.plan_names = {plan.code: plan.name for plan in plans}
        self.retail_prices = retail_prices or {}
        chosen = self["plan_id"].value()
        self.chosen_plan = chosen if chosen in self.plan_names else "pro"
        self.payg_price = self.retail_prices.get(self.chosen_plan)
        # Offered for a plan with a retail price; kept selectable when it was chosen, so the error shows beside it.
        self.payg_offered = self.payg_price is not None or self["funding_mode"].value() == PAY_AS_YOU_GO
        if not self.payg_offered:
            self.fields["funding_mode"].widget.disabled_values = {PAY_AS_YOU_GO}

    def priced_plans(self) -> list[tuple[str, str, object]]:
        """The other plans with a retail price (code, name, price): where pay-as-you-go is offered instead."""
        return [(code, self.plan_names[code], price) for code, price in self.retail_prices.items()
                if code != self.chosen_plan and code in self.plan_names]

    def clean_funding_mode(self) -> str:
        return self.cleaned_data["funding_mode"] or SLOT


class AliasForm(PortalForm):
    alias_address = forms.CharField(
        label="Alias address",
        max_length=320,
        help_text="Another address on one of your domains that delivers here.",
        widget=forms.TextInput(attrs={"autocomplete": "off", "autocapitalize": "none", "spellcheck": "false"}),
    )


# Settings


class LapseActionForm(PortalForm):
    default_client_lapse_action = forms.ChoiceField(
        label="When a client's mailbox lapses",
        choices=LapseAction.choices,
        widget=forms.RadioSelect,
    )


API_KEY_EXPIRY = {"": ("Never", None), "7": ("In 7 days", 7), "30": ("In 30 days", 30), "90": ("In 90 days", 90),
                  "365": ("In a year", 365)}


@dataclass
class ScopeGroup:
    label: str
    checkboxes: list


class ApiKeyForm(PortalForm):
    name = forms.CharField(
        label="Name",
        max_length=100,
        help_text="What uses the key, so you recognise it later: “Billing sync”, “Staging”.",
        widget=forms.TextInput(attrs={"autocomplete": "off"}),
    )
    scopes = forms.MultipleChoiceField(
        label="Scopes",
        widget=forms.CheckboxSelectMultiple,
        initial=["send"],
        error_messages={"required": "Choose at least one scope."},
    )
    expiry = forms.ChoiceField(label="Expires", required=False,
                               choices=[(value, label) for value, (label, _) in API_KEY_EXPIRY.items()])
    allowed_ips = forms.CharField(
        label="Allowed IP addresses",
        required=False,
        help_text="One address or CIDR range per line. Only these may use the key; leave empty to allow any.",
        widget=forms.Textarea(attrs={"rows": 3, "placeholder": "203.0.113.10\n198.51.100.0/24", "spellcheck": "false"}),
    )
    blocked_ips = forms.CharField(
        label="Blocked IP addresses",
        required=False,
        help_text="One per line. Checked before the allowed list.",
        widget=forms.Textarea(attrs={"rows": 3, "placeholder": "192.0.2.0/24", "spellcheck": "false"}),
    )

    def __init__(self, data=None, *, for_partner: bool, **kwargs):
        super().__init__(data, **kwargs)
        self.for_partner = for_partner
        choices = list(USER_SCOPES.items())
        if for_partner:
            choices += list(PARTNER_SCOPES.items())
        self.fields["scopes"].choices = choices

    def clean_allowed_ips(self) -> list[str]:
        return _ip_lines(self.cleaned_data["allowed_ips"])

    def clean_blocked_ips(self) -> list[str]:
        return _ip_lines(self.cleaned_data["blocked_ips"])

    def expires_at(self, now):
        days = API_KEY_EXPIRY[self.cleaned_data.get("expiry") or ""][1]
        return None if days is None else now + timedelta(days=days)

    def scope_groups(self) -> list[ScopeGroup]:
        boxes = list(self["scopes"])
        groups = [ScopeGroup("Account", [box for box in boxes if box.data["value"] in USER_SCOPES])]
        if self.for_partner:
            groups.append(ScopeGroup("Hosting partner", [box for box in boxes if box.data["value"] in PARTNER_SCOPES]))
        return groups


# domains and clients: they parse what people type; the services decide what is allowed


class ClientChoiceField(forms.ModelChoiceField):
    def label_from_instance(self, obj: PartnerClient) -> str:
        return obj.name


class DomainAddForm(PortalForm):
    name = forms.CharField(
        label="Domain name", max_length=253,
        help_text="The domain your client's addresses end with, such as example.com: no http://, www or path.",
        widget=forms.TextInput(attrs={"placeholder": "example.com", "autocomplete": "off", "autocapitalize": "none",
                                      "spellcheck": "false", "inputmode": "url"}),
    )
    client = ClientChoiceField(
        label="Client", queryset=PartnerClient.objects.none(), required=False,
        empty_label="A new client named after the domain",
        help_text="Whose domain this is. Mailboxes on it count towards this client.",
    )
    alias_of = forms.ModelChoiceField(
        label="Alias of", queryset=Domain.objects.none(), required=False,
        empty_label="No: a domain with its own mailboxes",
        help_text="Mail to any address on the new domain reaches the same address on this one (same client), "
                  "once both are verified.",
    )

    def __init__(self, *args, partner: HostingPartner, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["client"].queryset = PartnerClient.objects.filter(partner=partner)
        self.fields["alias_of"].queryset = Domain.objects.filter(account=partner.account_id, alias_of__isnull=True)

    # The service checks the name again; asking the same function here shows the error at once.
    def clean_name(self) -> str:
        try:
            return domain_name_clean(self.cleaned_data["name"])
        except InvalidDomainName as exc:
            raise ValidationError(name_error(exc)) from None


class ClientNameForm(forms.Form):
    name = forms.CharField(label="Client name", max_length=200,
                           help_text="Only you see it: your customer's company or person name.",
                           widget=forms.TextInput(attrs={"autocomplete": "off", "placeholder": "Acme Ltd"}))


class ClientLapseForm(forms.Form):
    """The client's own lapse action, or "" to follow the partner's default (set on the Settings page)."""

    lapse_action_override = forms.ChoiceField(label="When a mailbox's term ends", widget=forms.RadioSelect,
                                              required=False)

    def __init__(self, *args, partner: HostingPartner, **kwargs):
        super().__init__(*args, **kwargs)
        default = partner.get_default_client_lapse_action_display()
        self.fields["lapse_action_override"].choices = [("", f"Your default ({default})"), *LapseAction.choices]


def name_error(exc: Exception) -> str:
    text = str(exc)
    return f"{text[:1].upper()}{text[1:]}. Enter just the name, such as example.com."


def field_errors(form: forms.Form, exc: InvalidFields, field: str) -> None:
    """A service's InvalidFields on this form's `field` (the API calls it by another name)."""
    for messages_ in exc.message_dict.values():
        for message in messages_:
            form.add_error(field, f"{message[:1].upper()}{message[1:]}.")


LAPSE_DONE = {LapseAction.SUSPEND: "suspended", LapseAction.DOWNGRADE_FREE: "downgraded to Free"}


# Pay-as-you-go: amounts are typed in major units (7.50); the billing services take minor units

PLAN_CHOICES = [("pro", "Pro"), ("premium", "Premium")]
CURRENCY_CHOICES = [("usd", "USD ($)"), ("ngn", "NGN (₦)")]


class MajorUnitsField(forms.DecimalField):
    """An amount such as 7.50, cleaned to integer minor units (750)."""

    def __init__(self, **kwargs):
        super().__init__(min_value=Decimal("0.01"), max_digits=12, decimal_places=2, **kwargs)
        self.widget.attrs.update({"inputmode": "decimal", "step": "0.01", "min": "0.01"})

    def clean(self, value) -> int:
        return int(super().clean(value) * 100)


class BillingCurrencyForm(PortalForm):
    """A form whose only currency is the partner's billing currency: its customers pay in it and its
    earnings are paid out in it (the service refuses the other one too)."""

    currency = forms.ChoiceField(label="Currency", choices=CURRENCY_CHOICES)

    def __init__(self, *args, partner, **kwargs):
        super().__init__(*args, **kwargs)
        code = partner.billing_currency
        self.fields["currency"].choices = [(value, label) for value, label in CURRENCY_CHOICES if value == code]
        self.fields["currency"].initial = code
        self.fields["currency"].widget = forms.HiddenInput()
        self.currency_label = code.upper()


class RetailPriceForm(BillingCurrencyForm):
    field_order = ["plan_type", "retail_price", "currency"]

    plan_type = forms.ChoiceField(label="Plan", choices=PLAN_CHOICES)
    retail_price = MajorUnitsField(label="Price per mailbox and month",
                                   help_text="What your customer pays, in your billing currency; at least the "
                                             "wholesale rate.")


class PayoutRequestForm(BillingCurrencyForm):
    field_order = ["amount", "currency"]

    amount = MajorUnitsField(label="Amount")


class CheckoutLinkEmailForm(PortalForm):
    email = forms.EmailField(label="Your customer's email address", max_length=254,
                             error_messages={"invalid": "Enter an email address such as ann@example.com.",
                                             "required": "Enter your customer's email address."},
                             widget=forms.EmailInput(attrs={"autocomplete": "off", "placeholder": "ann@example.com"}))


class SubscriptionCancelForm(forms.Form):
    when = forms.ChoiceField(label="Cancel the subscription", initial="period_end", widget=forms.RadioSelect,
                             choices=[("period_end", "At the end of the paid period"),
                                      ("now", "Now: the mailbox is switched off at once")])


class PlanChangeForm(PortalForm):
    new_plan_type = forms.ChoiceField(label="Change the plan to", choices=PLAN_CHOICES)

    def __init__(self, data=None, *, current: str, retail_prices: dict, **kwargs):
        """Only the other plans; each names its retail price (or that it has none)."""
        super().__init__(data, **kwargs)
        self.fields["new_plan_type"].choices = [
            (code, f"{name}: {retail_prices[code]} a month" if code in retail_prices else f"{name} (no retail price)")
            for code, name in PLAN_CHOICES if code != current]


class DomainProtectionForm(PortalForm):
    """A client domain's spam thresholds; the service checks junk <= quarantine <= refuse."""

    junk_at = forms.FloatField(label="Junk from score", min_value=0, max_value=100,
                               help_text="Mail scoring this or more goes to the recipient's Junk folder.",
                               widget=forms.NumberInput(attrs={"step": "0.5"}))
    quarantine_at = forms.FloatField(label="Quarantine from score", min_value=0, max_value=100,
                                     help_text="Held in quarantine instead of delivered; the owner can release it.",
                                     widget=forms.NumberInput(attrs={"step": "0.5"}))
    refuse_at = forms.FloatField(label="Refuse from score", min_value=0, max_value=100,
                                 help_text="Refused while the sender is still connected: they get the bounce, "
                                           "never your client.",
                                 widget=forms.NumberInput(attrs={"step": "0.5"}))
    greylist = forms.BooleanField(label="Ask unknown senders with a doubtful score to retry once (greylisting)",
                                  required=False)


class MonthlyReportForm(PortalForm):
    """A client domain's monthly DMARC report: on or off, and the client's contact address."""

    enabled = forms.BooleanField(required=False, label="Send the client a monthly report under my brand")
    send_to = forms.EmailField(required=False, label="Client's contact address", max_length=254)


class CatchAllForm(forms.Form):
    address = forms.ChoiceField(label="Catch-all mailbox", help_text=(
        "Mail to any address on the domain that no mailbox or alias has goes here."))

    def __init__(self, *args, mailboxes: list[str], **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["address"].choices = [(address, address) for address in mailboxes]


class DomainMtaStsForm(PortalForm):
    """A client domain's MTA-STS mode; the service refuses any other value."""

    mode = forms.ChoiceField(label="Mode", widget=forms.RadioSelect, choices=[
        ("testing", "Testing: senders deliver as before and report TLS problems to us"),
        ("enforce", "Enforce: senders deliver only over verified TLS to our servers, or not at all"),
        ("none", "None: senders forget the policy (before you stop using it)"),
    ])


class DkimSettingsForm(PortalForm):
    """A domain's DKIM key rotation schedule and Ed25519 beside RSA; the service checks the range too."""

    rotate_every_months = forms.IntegerField(
        label="Rotate the key every (months)", min_value=0, max_value=24,
        help_text="0: only when you start a rotation. Otherwise a rotation starts this many months after the key "
                  "started signing; you publish its new record, and signing switches once DNS has it.")
    ed25519 = forms.BooleanField(label="Also sign with an Ed25519 key (RFC 8463), beside RSA", required=False)
