"""The portal's sign-in page: allauth's, answering 429 with Retry-After once the failed-login limit
(ACCOUNT_RATE_LIMITS["login_failed"]) is reached, as the API, webmail and DAV sign-ins do."""
from allauth.account.views import LoginView
from allauth.core.internal.ratelimit import parse_rates  # allauth's own reading of the setting (pinned)
from django.conf import settings


def login_failed_window_seconds() -> int:
    """The longest window of the failed-login limit: once it has passed, the count is reset."""
    return int(max(rate.duration for rate in parse_rates(settings.ACCOUNT_RATE_LIMITS["login_failed"])))


class ThrottledLoginView(LoginView):
    def form_invalid(self, form):
        response = super().form_invalid(form)
        if any(error.code == "too_many_login_attempts" for error in form.non_field_errors().as_data()):
            response.status_code = 429
            response["Retry-After"] = str(login_failed_window_seconds())
        return response


login = ThrottledLoginView.as_view()
