"""What a mailbox's holder set up for their own access and automations ends with the mailbox: a
deleted address the partner creates again must not keep working for (or sending to) its first
holder. The mail itself stays (a later issue makes deletion delete mail)."""
from django.db import transaction
from django.utils import timezone

from mailcore.calendars.models import Calendar
from mailcore.mailboxes.models import ForwardingRule, Mailbox
from mailcore.sending.models import SendFailure
from mailcore.webmail.models import MailFilter, SieveScript, VacationAnswer, VacationReply, WebmailSession


def mailbox_holder_forget(*, mailbox: Mailbox) -> None:
    """Remove the holder's forwarding rules, filters, vacation reply and its published Sieve script,
    calendar feed links and send-failure notices; end their webmail sessions."""
    with transaction.atomic():
        ForwardingRule.objects.filter(mailbox=mailbox).delete()
        MailFilter.objects.filter(mailbox=mailbox).delete()
        VacationReply.objects.filter(mailbox=mailbox).delete()
        VacationAnswer.objects.filter(mailbox=mailbox).delete()
        SieveScript.objects.filter(mailbox=mailbox).delete()
        Calendar.objects.filter(mailbox=mailbox).update(feed_token_digest=None)
        SendFailure.objects.filter(mailbox=mailbox).delete()
        WebmailSession.objects.filter(mailbox=mailbox, ended_at__isnull=True).update(ended_at=timezone.now())
