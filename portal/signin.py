"""The portal's sign-in page: allauth's, answering 429 with Retry-After once the failed-login limit
(ACCOUNT_RATE_LIMITS["login_failed"]) is reached, as the API, webmail and DAV sign-ins do."""
from allauth.account.views import LoginView

LOGIN_FAILED_WINDOW_SECONDS = 300  # the "5m" of ACCOUNT_RATE_LIMITS["login_failed"]


class ThrottledLoginView(LoginView):
    def form_invalid(self, form):
        response = super().form_invalid(form)
        if any(error.code == "too_many_login_attempts" for error in form.non_field_errors().as_data()):
            response.status_code = 429
            response["Retry-After"] = str(LOGIN_FAILED_WINDOW_SECONDS)
        return response


login = ThrottledLoginView.as_view()
