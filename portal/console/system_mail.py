"""The console's "System mail domain" page: the records the operator publishes for
SYSTEM_MAIL_DOMAIN (SPF, DKIM, DMARC) and what DNS holds for each, looked up on each visit."""
from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from mailcore.domains.system_domain import system_domain_check


def system_mail_domain_view(site, request: HttpRequest) -> HttpResponse:
    records = system_domain_check()
    context = {**site.each_context(request), "title": "System mail domain", "domain": settings.SYSTEM_MAIL_DOMAIN,
               "records": records, "all_ok": all(record.ok for record in records),
               "from_email": settings.DEFAULT_FROM_EMAIL}
    return TemplateResponse(request, "admin/operator/system_mail_domain.html", context)
