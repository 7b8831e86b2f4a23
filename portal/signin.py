"""The portal's sign-in page: allauth's, answering 429 with Retry-After once the failed-login limit
is reached (mailcore.throttle, the count it shares with POST /auth/login; portal.adapters)."""
from allauth.account.views import LoginView
from django.conf import settings


class ThrottledLoginView(LoginView):
    def form_invalid(self, form):
        response = super().form_invalid(form)
        if any(error.code == "too_many_login_attempts" for error in form.non_field_errors().as_data()):
            response.status_code = 429
            retry_after = getattr(self.request, "login_retry_after", None)
            response["Retry-After"] = str(retry_after or int(settings.LOGIN_FAILURE_WINDOW.total_seconds()))
        return response


login = ThrottledLoginView.as_view()
