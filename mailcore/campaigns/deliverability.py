"""What bulk mail needs on top of a plain send (filled in by the deliverability work of issue 17):
List-Unsubscribe with a signed one-click URL (RFC 8058), a return path bounces cannot be forged
for, and the sender's postal address in the footer."""
from mailcore.campaigns.models import StepDelivery
from mailcore.sending.inputs import SendRequest


def decorate(delivery: StepDelivery, request: SendRequest) -> SendRequest:
    """The send request of a campaign delivery, with the bulk-mail headers and footer."""
    return request
