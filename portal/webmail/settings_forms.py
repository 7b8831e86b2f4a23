"""Forms of the owner's settings pages: they parse what the owner typed; the services decide what is
allowed (mailcore.rules.filters, webmail.owner, mailcore.mailboxes). Identity and
forwarding reuse the forms the partner realm fills in for the same services (portal.forms)."""
from django import forms

from mailcore.rules.filters import BODY_MAX, DAYS_MAX, DAYS_MIN, SUBJECT_MAX, VALUE_MAX, FilterInput, VacationInput
from mailcore.rules.models import MailFilter
from webmail.owner import PASSWORD_MAX
from portal.forms import ForwardingRuleEnabledForm, ForwardingRuleForm, MailboxIdentityForm, PortalForm, SenderRuleForm

__all__ = ["FilterForm", "FilteringForm", "ForwardingRuleEnabledForm", "ForwardingRuleForm", "MailboxIdentityForm",
           "PasswordChangeForm", "SenderRuleForm", "VacationForm"]


class PasswordChangeForm(PortalForm):
    current_password = forms.CharField(label="Current password", strip=False, max_length=PASSWORD_MAX,
                                       widget=forms.PasswordInput(attrs={"autocomplete": "current-password"}))
    new_password = forms.CharField(label="New password", strip=False, max_length=PASSWORD_MAX,
                                   help_text="At least 8 characters. Mail apps on your phone and computer will "
                                             "ask for it.",
                                   widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}))
    new_password_again = forms.CharField(label="New password again", strip=False, max_length=PASSWORD_MAX,
                                         widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}))

    def clean(self):
        data = super().clean()
        if data.get("new_password") and data.get("new_password_again") not in (None, data["new_password"]):
            self.add_error("new_password_again", "The two new passwords are not the same.")
        return data


class FilterForm(PortalForm):
    """One filter: a condition, one action, and whether later filters still run."""

    field = forms.ChoiceField(label="Look at", choices=MailFilter.Field.choices)
    match = forms.ChoiceField(label="Match", choices=MailFilter.Match.choices,
                              help_text="\u201cis\u201d compares whole addresses for From and To, the whole "
                                        "subject for Subject.")
    value = forms.CharField(label="Text", max_length=VALUE_MAX,
                            widget=forms.TextInput(attrs={"autocomplete": "off", "placeholder": "invoice"}))
    action = forms.ChoiceField(label="Then", choices=MailFilter.Action.choices)
    folder = forms.ChoiceField(label="Folder", required=False, help_text="For \u201cMove to folder\u201d.")
    label = forms.TypedChoiceField(label="Label", required=False, coerce=int, empty_value=None,
                                   help_text="For \u201cAdd label\u201d.")
    stop = forms.BooleanField(label="Stop here: later filters skip mail this one matched", required=False,
                              initial=True)
    enabled = forms.BooleanField(label="This filter is on", required=False, initial=True)

    def __init__(self, *args, folders: list[str], labels: list, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["folder"].choices = [("", "Choose a folder")] + [(name, name) for name in folders]
        self.fields["label"].choices = [("", "Choose a label")] + [(label.pk, label.name) for label in labels]
        if not labels:
            self.fields["label"].help_text = "For \u201cAdd label\u201d. You have no labels yet: make one under " \
                                             "Manage labels."

    def filter_input(self) -> FilterInput:
        data = self.cleaned_data
        return FilterInput(field=data["field"], match=data["match"], value=data["value"], action=data["action"],
                           folder=data.get("folder") or "", label_id=data.get("label"), stop=data["stop"],
                           enabled=data["enabled"])

    @classmethod
    def initial_for(cls, mail_filter: MailFilter) -> dict:
        return {"field": mail_filter.field, "match": mail_filter.match, "value": mail_filter.value,
                "action": mail_filter.action, "folder": mail_filter.folder, "label": mail_filter.label_id,
                "stop": mail_filter.stop, "enabled": mail_filter.enabled}


class VacationForm(PortalForm):
    enabled = forms.BooleanField(label="Answer incoming mail automatically", required=False)
    subject = forms.CharField(label="Subject", required=False, max_length=SUBJECT_MAX,
                              help_text="Leave empty to answer with \u201cAuto:\u201d and the sender's subject.",
                              widget=forms.TextInput(attrs={"placeholder": "Away until Monday 5 January"}))
    body = forms.CharField(label="Reply", required=False, max_length=BODY_MAX, strip=False,
                           widget=forms.Textarea(attrs={"rows": 6}),
                           help_text="Plain text, sent as it is written.")
    starts_on = forms.DateField(label="First day", required=False,
                                widget=forms.DateInput(attrs={"type": "date"}, format="%Y-%m-%d"),
                                help_text="Empty: from now. Days are counted in UTC.")
    ends_on = forms.DateField(label="Last day", required=False,
                              widget=forms.DateInput(attrs={"type": "date"}, format="%Y-%m-%d"),
                              help_text="Empty: until you turn it off.")
    days = forms.IntegerField(label="Answer each sender at most once every", min_value=DAYS_MIN, max_value=DAYS_MAX,
                              initial=7, help_text=f"Days, {DAYS_MIN} to {DAYS_MAX}.")

    def vacation_input(self) -> VacationInput:
        data = self.cleaned_data
        return VacationInput(enabled=data["enabled"], subject=data["subject"], body=data["body"],
                             starts_on=data["starts_on"], ends_on=data["ends_on"], days=data["days"])


class FilteringForm(PortalForm):
    """The owner's own Junk threshold; empty follows the domain's (the service refuses a laxer one)."""

    junk_at = forms.FloatField(label="Put mail in Junk from this spam score", required=False, min_value=0,
                               max_value=100, widget=forms.NumberInput(attrs={"step": "0.5"}))
