"""What a mailbox's holder set up for their own access and automations ends with the mailbox: a
deleted address the partner creates again must not keep working for (or sending to) its first
holder. The mail itself stays (a later issue makes deletion delete mail)."""
from django.db import transaction

from mailcore.hooks import Hook
from mailcore.mailboxes.models import ForwardingRule, Mailbox
from mailcore.rules.models import MailFilter, SieveScript, VacationAnswer, VacationReply
from mailcore.sending.models import SendFailure

# Feature apps forget what they keep for the holder (calendar feed links, webmail sessions): called
# with mailbox=, inside the same transaction.
mailbox_holder_forgotten = Hook("mailbox_holder_forgotten")


def mailbox_holder_forget(*, mailbox: Mailbox) -> None:
    """Remove the holder's forwarding rules, filters, vacation reply and its published Sieve script,
    and send-failure notices; feature apps forget theirs (calendar feed links, webmail sessions)."""
    with transaction.atomic():
        ForwardingRule.objects.filter(mailbox=mailbox).delete()
        MailFilter.objects.filter(mailbox=mailbox).delete()
        VacationReply.objects.filter(mailbox=mailbox).delete()
        VacationAnswer.objects.filter(mailbox=mailbox).delete()
        SieveScript.objects.filter(mailbox=mailbox).delete()
        SendFailure.objects.filter(mailbox=mailbox).delete()
        mailbox_holder_forgotten(mailbox=mailbox)
