"""Terms that run out: expiring-soon notices, lapses (suspend or downgrade), trials ending.

Run by the sweep every minute; each step is a conditional UPDATE per row, so two workers never
apply a lapse or send a notice twice.
"""
from datetime import timedelta

from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.template.loader import render_to_string
from django.utils import timezone

from mailcore.accounts.models import Plan
from mailcore.partners.models import HostingPartner, LapseAction
from mailcore.events.services import emit
from mailcore.partners.mailboxes import partner_mailbox_event_data
from mailcore.partners.models import MailboxSlot, PartnerMailbox
from mailcore.timefmt import iso

NOTICE_AHEAD = timedelta(days=7)
RUNNING = [PartnerMailbox.Status.TRIAL, PartnerMailbox.Status.ACTIVE]


def effective_lapse_action(partner_mailbox: PartnerMailbox) -> str:
    client = partner_mailbox.mailbox.domain.client
    return (client.lapse_action_override if client and client.lapse_action_override
            else partner_mailbox.partner.default_client_lapse_action)


def lapse_apply(*, partner_mailbox: PartnerMailbox) -> bool:
    """suspend: locked out of IMAP, webmail and sending; downgrade_free: reachable on the Free plan.

    Applies only while the term is still over and the mailbox still running (one conditional
    UPDATE), so a renewal in between or a second worker changes nothing. Returns whether it applied.
    """
    suspend = effective_lapse_action(partner_mailbox) == LapseAction.SUSPEND
    status = PartnerMailbox.Status.SUSPENDED if suspend else PartnerMailbox.Status.EXPIRED
    if not PartnerMailbox.objects.filter(pk=partner_mailbox.pk, status__in=RUNNING,
                                         expires_at__lte=timezone.now()).update(status=status):
        return False
    partner_mailbox.status = status
    mailbox = partner_mailbox.mailbox
    if suspend:
        mailbox.is_active = False
    else:
        mailbox.plan = Plan.objects.get(code="free")
    mailbox.save(update_fields=["is_active", "plan"])
    if partner_mailbox.slot_id:
        MailboxSlot.objects.filter(pk=partner_mailbox.slot_id).update(status=MailboxSlot.Status.EXPIRED)
    return True


def _trial_notice_mail(partner: HostingPartner) -> None:
    recipients = list(partner.account.users.values_list("email", flat=True))
    if recipients:
        body = render_to_string("emails/partner_trial_ending.txt",
                                {"partner": partner, "base_url": settings.PUBLIC_BASE_URL})
        send_mail(f"Your {settings.SITE_NAME} partner trial ends soon", body, None, recipients)


def partner_terms_sweep() -> dict[str, int]:
    now = timezone.now()
    done = {"expiring_soon": 0, "trial_expiring_soon": 0, "lapsed": 0, "trials_ended": 0}
    prepaid = PartnerMailbox.objects.filter(funding_mode=PartnerMailbox.Funding.SLOT)  # pay-as-you-go: the provider
    soon = prepaid.filter(status=PartnerMailbox.Status.ACTIVE, expires_at__gt=now,
                                         expires_at__lte=now + NOTICE_AHEAD, expiring_notice_sent_at__isnull=True)
    for partner_mailbox in soon.select_related("mailbox__domain", "partner__account"):
        with transaction.atomic():
            if PartnerMailbox.objects.filter(pk=partner_mailbox.pk, expiring_notice_sent_at__isnull=True).update(
                    expiring_notice_sent_at=now):
                emit(account=partner_mailbox.partner.account, name="partner_mailbox.expiring_soon",
                     data=partner_mailbox_event_data(partner_mailbox))
                done["expiring_soon"] += 1
    trials = HostingPartner.objects.filter(status=HostingPartner.Status.TRIAL, trial_ends_at__gt=now,
                                           trial_ends_at__lte=now + NOTICE_AHEAD, trial_notice_sent_at__isnull=True)
    for partner in trials.select_related("account"):
        with transaction.atomic():
            if HostingPartner.objects.filter(pk=partner.pk, trial_notice_sent_at__isnull=True).update(
                    trial_notice_sent_at=now):
                emit(account=partner.account, name="partner_trial.expiring_soon",
                     data={"trial_ends_at": iso(partner.trial_ends_at)})
                transaction.on_commit(lambda partner=partner: _trial_notice_mail(partner))
                done["trial_expiring_soon"] += 1
    lapsing = prepaid.filter(status__in=RUNNING, expires_at__lte=now)
    for partner_mailbox in lapsing.select_related("mailbox__domain__client", "partner"):
        with transaction.atomic():
            done["lapsed"] += lapse_apply(partner_mailbox=partner_mailbox)
    done["trials_ended"] = HostingPartner.objects.filter(
        status=HostingPartner.Status.TRIAL, trial_ends_at__lte=now).update(status=HostingPartner.Status.EXPIRED)
    return done
