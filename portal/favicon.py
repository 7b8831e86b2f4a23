"""/favicon.ico, which browsers ask for on pages that name no icon (Django's admin pages among them):
a redirect to the one icon in static/, so no page logs a 404."""
from django.http import HttpResponseRedirect
from django.templatetags.static import static
from django.views.decorators.http import require_GET


@require_GET
def favicon(request):
    """Temporary, not permanent: the static name carries a content hash in production and changes with the icon."""
    response = HttpResponseRedirect(static("favicon.svg"))
    response["Cache-Control"] = "public, max-age=86400"
    return response
