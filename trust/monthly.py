"""The monthly report a partner may switch on for a client domain: last month's DMARC and TLS
figures and the advisor's word, branded with the partner's name and colour, sent to the client's
contact address through Django's mail API.

Exactly once per domain and month: a MonthlyReportRun row (unique per domain and month) is claimed
and committed before the message is sent and marked sent after, so a run killed mid-way leaves the
domains it finished marked and the next run does only the rest. A claim left unsent by a killed
worker is taken again after CLAIM_LEASE; the message keeps one Message-ID per domain and month, so
in the one window that cannot be closed (killed after the relay accepted it, before the row was
marked) a second copy is the same message to the client's mail program."""
import logging
from datetime import UTC, date, datetime, timedelta
from email.utils import formataddr, parseaddr

from django.conf import settings
from django.core.mail import EmailMultiAlternatives
from django.db import IntegrityError, transaction
from django.template.loader import render_to_string
from django.utils import timezone

from trust.advisor import RULE, policy_advice
from trust.models import MonthlyReportRun, MonthlyReportSetting
from trust.selectors import dmarc_summary

log = logging.getLogger(__name__)

CLAIM_LEASE = timedelta(hours=1)
PRODUCT_NAME = "Mailwell"
DEFAULT_COLOR = "#1f2937"


def previous_month(now: datetime) -> date:
    first = now.date().replace(day=1)
    return (first - timedelta(days=1)).replace(day=1)


def _next_month(month: date) -> date:
    return (month.replace(day=28) + timedelta(days=4)).replace(day=1)


def _brand(setting: MonthlyReportSetting) -> tuple[str, str]:
    """The partner's brand name and primary colour (its account's name and ours when it set none)."""
    partner = getattr(setting.domain.account, "partner", None)
    if partner is None:
        return PRODUCT_NAME, DEFAULT_COLOR
    brand = getattr(partner, "webmail_brand", None)
    name = (brand.brand_name if brand and brand.brand_name else "") or partner.account.name or PRODUCT_NAME
    return name, (brand.primary_color if brand and brand.primary_color else DEFAULT_COLOR)


def monthly_report_message(setting: MonthlyReportSetting, month: date) -> EmailMultiAlternatives:
    domain = setting.domain
    end = _next_month(month)
    until = datetime(end.year, end.month, end.day, tzinfo=UTC)
    summary = dmarc_summary(domain=domain, days=(end - month).days, until=until)
    brand, color = _brand(setting)
    context = {"brand": brand, "color": color, "domain": domain, "month": month, "summary": summary,
               "advice": policy_advice(summary), "rule": RULE}
    message = EmailMultiAlternatives(
        subject=f"{domain.name}: mail authentication in {month:%B %Y}",
        body=render_to_string("trust/monthly_report.txt", context),
        from_email=formataddr((brand, parseaddr(settings.DEFAULT_FROM_EMAIL)[1])),
        to=[setting.send_to],
        headers={"Message-ID": f"<dmarc-monthly.{domain.pk}.{month:%Y%m}@{settings.MAIL_HOST}>",
                 "Auto-Submitted": "auto-generated"})
    message.attach_alternative(render_to_string("trust/monthly_report.html", context), "text/html")
    return message


def _claim(setting: MonthlyReportSetting, month: date, now: datetime) -> MonthlyReportRun | None:
    """The month's run for the domain, claimed by this run; None when it is sent or claimed elsewhere."""
    try:
        with transaction.atomic():
            return MonthlyReportRun.objects.create(domain=setting.domain, month=month, claimed_at=now)
    except IntegrityError:
        pass
    taken = MonthlyReportRun.objects.filter(domain=setting.domain, month=month, sent_at__isnull=True,
                                            claimed_at__lt=now - CLAIM_LEASE).update(claimed_at=now)
    return MonthlyReportRun.objects.get(domain=setting.domain, month=month) if taken else None


def monthly_reports_send() -> dict:
    """The job: each switched-on domain's report for last month, once."""
    now = timezone.now()
    month = previous_month(now)
    sent = failed = 0
    settings_on = (MonthlyReportSetting.objects.filter(enabled=True, domain__status="verified").exclude(send_to="")
                   .select_related("domain__account__partner__webmail_brand").order_by("domain_id"))
    for setting in settings_on:
        run = _claim(setting, month, now)
        if run is None:
            continue
        try:
            monthly_report_message(setting, month).send()
        except Exception:  # the claim's lease lets a later run try again; others are not held up
            log.exception("monthly report of %s for %s not sent", setting.domain.name, month)
            failed += 1
            continue
        MonthlyReportRun.objects.filter(pk=run.pk).update(sent_at=timezone.now(), sent_to=setting.send_to)
        sent += 1
    return {"sent": sent, "failed": failed}
