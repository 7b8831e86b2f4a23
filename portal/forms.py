"""Forms the realms share: PortalForm, and the mailbox identity, forwarding-rule and sender-rule forms
a partner (portal.partner) and a mailbox's owner (portal.webmail) fill in for the same services. They parse what people type; the services decide what is allowed."""
from django import forms
from django.core.exceptions import ValidationError

from mailcore.errors import InvalidFields


class PortalForm(forms.Form):
    """A form that puts keyboard focus on its first invalid field (htmx focuses [autofocus] after a swap)."""

    def add_error(self, field, error):
        super().add_error(field, error)
        first = next((name for name in self.fields if name in self.errors), None)
        for name, form_field in self.fields.items():
            if name == first:
                form_field.widget.attrs["autofocus"] = True
            else:
                form_field.widget.attrs.pop("autofocus", None)

    def add_service_error(self, error: InvalidFields) -> None:
        """A service's InvalidFields, each message next to the field it names (else above the form)."""
        for name, messages in error.message_dict.items():
            for message in messages:
                self.add_error(name if name in self.fields else None, _sentence(message))


def _sentence(text: str) -> str:
    """A service's terse message as a sentence, leaving an address or domain at its start as it is."""
    first = text.split(" ", 1)[0]
    if "." not in first and "@" not in first:
        text = text[:1].upper() + text[1:]
    return text if text.endswith((".", "!", "?")) else f"{text}."


class MailboxIdentityForm(PortalForm):
    display_name = forms.CharField(label="Display name", required=False, max_length=200,
                                   widget=forms.TextInput(attrs={"autocomplete": "off"}))
    signature_html = forms.CharField(
        label="Signature",
        required=False,
        max_length=10_000,
        strip=False,
        help_text="HTML added to the end of outgoing mail. Scripts, event handlers and unsafe links are removed.",
        widget=forms.Textarea(attrs={"rows": 4, "spellcheck": "false",
                                     "placeholder": "<p>Ann Smith<br>Example Ltd</p>"}),
    )

    def clean_display_name(self) -> str:
        value = self.cleaned_data["display_name"]
        if any(ord(char) < 32 or ord(char) == 127 for char in value):
            raise ValidationError("Use one line without control characters.")
        return value


class ForwardingRuleForm(PortalForm):
    forward_to = forms.CharField(
        label="Forward to",
        max_length=320,
        help_text="We email this address a link to confirm; nothing is forwarded until it is confirmed.",
        widget=forms.EmailInput(attrs={"autocomplete": "off", "placeholder": "ann@elsewhere.example"}),
    )
    keep_copy = forms.BooleanField(label="Keep a copy in this mailbox", required=False, initial=True)


class ForwardingRuleEnabledForm(forms.Form):
    enabled = forms.BooleanField(required=False, widget=forms.HiddenInput)


class SenderRuleForm(PortalForm):
    """An allowed or blocked sender: a mailbox owner's (webmail settings) or a client domain's (partner portal)."""

    sender = forms.CharField(
        label="Sender", max_length=320,
        help_text="An address (bob@example.com), or a domain (example.com) for everyone there and its subdomains.",
        widget=forms.TextInput(attrs={"autocomplete": "off", "placeholder": "bob@example.com or example.com"}),
    )
    kind = forms.ChoiceField(label="Then", choices=[("allow", "Always let in (skip the spam check)"),
                                                    ("block", "Always refuse (the sender is told, you never see it)")],
                             widget=forms.RadioSelect, initial="allow")
