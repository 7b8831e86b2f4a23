"""POST /billing/webhooks/<provider>: signed provider events, verified on the raw body.

Answers 200 as soon as the event is applied (a replay is 200 too, changing nothing); a missing or
bad signature is 400 and changes nothing. Not DRF: the raw bytes must reach the verifier untouched.
"""
import logging

from django.conf import settings
from django.http import JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from billing.providers.base import ProviderUnavailable, SignatureInvalid
from billing.providers.registry import NAMES
from billing.services.webhooks import webhook_receive

log = logging.getLogger(__name__)


@csrf_exempt
@require_POST
def provider_webhook(request, provider: str):
    if provider not in NAMES or provider not in settings.PAYMENT_PROVIDERS.values():
        return JsonResponse({"detail": "No such payment provider here."}, status=404)
    try:
        kind = webhook_receive(provider, request.body, request.headers)
    except SignatureInvalid as exc:
        log.warning("%s webhook refused: %s", provider, exc)
        return JsonResponse({"detail": f"Webhook signature invalid: {exc}."}, status=400)
    except ProviderUnavailable as exc:  # re-fetching the object failed: the provider retries later
        log.warning("%s webhook not applied yet: %s", provider, exc)
        return JsonResponse({"detail": exc.detail}, status=503)
    return JsonResponse({"received": True, "kind": kind})



