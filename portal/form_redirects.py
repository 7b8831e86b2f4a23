"""Where a form's answer may send the browser. The site's CSP says form-action 'self', and browsers
apply it to the redirect a form's POST answers with too: a page whose form hands the buyer to a
payment provider's checkout (or back from one) names that origin as well. Shared by the hosted
checkout and the partner's billing pages."""
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from django.conf import settings
from django.utils.csp import CSP

# The hosted checkout pages of each provider the portal's billing forms may redirect to.
CHECKOUT_ORIGINS = {"stripe": "https://checkout.stripe.com", "paystack": "https://checkout.paystack.com"}


def http_url(url: str) -> bool:
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    return parts.scheme.lower() in ("http", "https") and bool(parts.netloc)


def origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}"


def with_query(url: str, **params: str) -> str:
    """The URL with these query parameters set, keeping the others."""
    parts = urlsplit(url)
    query = [(key, value) for key, value in parse_qsl(parts.query, keep_blank_values=True) if key not in params]
    query += list(params.items())
    return urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(query), parts.fragment))


def allow_form_redirects(response, urls: list[str]):
    """Let this page's forms be answered with a redirect to these URLs' origins (http(s) ones only)."""
    origins = [origin(url) for url in urls if http_url(url)]
    if origins and settings.SECURE_CSP:
        policy = dict(settings.SECURE_CSP)
        policy["form-action"] = [*policy.get("form-action", [CSP.SELF]), *dict.fromkeys(origins)]
        response._csp_config = policy  # read by django.middleware.csp
    return response


def provider_checkout_origins() -> list[str]:
    """The checkout origins of the providers settings name (the local one is this site's public address)."""
    names = set(settings.PAYMENT_PROVIDERS.values())
    urls = [CHECKOUT_ORIGINS[name] for name in sorted(names) if name in CHECKOUT_ORIGINS]
    if "local" in names:
        urls.append(settings.PUBLIC_BASE_URL)
    return urls
