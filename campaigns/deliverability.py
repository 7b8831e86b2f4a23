"""What bulk mail needs on top of a plain send: List-Unsubscribe with a signed one-click URL and
List-Unsubscribe-Post (RFC 8058; both signed by DKIM, mailcore.domains.dkim), Precedence: bulk (so
auto-responders stay quiet) and a Feedback-ID (Gmail's complaint reports per campaign), a signed
return path (VERP: bounces come back naming exactly this message, mailcore.outbound.feedback), open
and click tracking where the plan allows read receipts, and a footer with the sender's postal
address and a visible unsubscribe link (never click-tracked)."""
import html
import re
from dataclasses import replace

from campaigns.models import StepDelivery
from campaigns.unsubscribe import unsubscribe_url
from mailcore.sending.compose import NO_TRACK, html_to_text
from mailcore.sending.inputs import SendRequest

_BODY_END = re.compile(r"</body\s*>", re.IGNORECASE)
FOOTER_STYLE = "margin-top:32px;padding-top:12px;border-top:1px solid #ddd;color:#666;font-size:12px;line-height:1.5"


def footer_html(*, postal_address: str, url: str) -> str:
    address = "<br>".join(html.escape(line.strip()) for line in postal_address.splitlines() if line.strip())
    return (f'<div class="campaign-footer" style="{FOOTER_STYLE}">'
            f'<p style="margin:0 0 6px">{address}</p>'
            f'<p style="margin:0">You get this email because you are on our list. '
            f'<a {NO_TRACK} href="{html.escape(url)}">Unsubscribe</a></p></div>')


def footer_text(*, postal_address: str, url: str) -> str:
    address = "\n".join(line.strip() for line in postal_address.splitlines() if line.strip())
    return f"\n\n-- \n{address}\nYou get this email because you are on our list. Unsubscribe: {url}\n"


def _with_footer(body_html: str, footer: str) -> str:
    ends = list(_BODY_END.finditer(body_html))
    if ends:
        at = ends[-1].start()
        return f"{body_html[:at]}{footer}\n{body_html[at:]}"
    return f"{body_html}\n{footer}"


def decorate(delivery: StepDelivery, request: SendRequest) -> SendRequest:
    """The send request of a campaign delivery, with the bulk-mail headers and footer."""
    campaign = delivery.enrollment.campaign
    url = unsubscribe_url(delivery)
    body_text = request.body_text or (html_to_text(request.body_html) if request.body_html else "")
    return replace(
        request,
        body_html=_with_footer(request.body_html, footer_html(postal_address=campaign.postal_address, url=url)),
        body_text=body_text.rstrip() + footer_text(postal_address=campaign.postal_address, url=url),
        headers=(
            ("List-Unsubscribe", f"<{url}>"),
            ("List-Unsubscribe-Post", "List-Unsubscribe=One-Click"),
            ("Precedence", "bulk"),
            # campaign:step:account:sender, as Gmail's Feedback Loop reads it
            ("Feedback-ID", f"{campaign.pk}:{delivery.step_id}:{campaign.account_id}:mailwell"),
        ),
        verp=True,
        track_opens=True,  # mail_send keeps it only when the plan allows read receipts
    )
