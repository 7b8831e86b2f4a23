"""Access rules every realm shares (each realm's own sign-in rule stays in its package)."""
from django.core.exceptions import ObjectDoesNotExist
from django.http import Http404


def found_or_404(select, what: str, **lookup):
    """The caller's object from a scoped selector, or a 404 naming what was not found (another
    account's object included: it does not exist for this caller)."""
    try:
        return select(**lookup)
    except ObjectDoesNotExist:
        raise Http404(f"No such {what}.") from None
