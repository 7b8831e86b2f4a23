"""The real API plus three probe endpoints that exercise the shared permission classes and the
500 handler the way later endpoints will use them (a scoped endpoint, a plan-gated one, a bug)."""
from django.urls import include, path
from rest_framework.response import Response
from rest_framework.views import APIView


class ScopedProbe(APIView):
    required_scopes = {"GET": "mailboxes:read", "POST": "mailboxes:write"}

    def get(self, request):
        return Response({"ok": True})

    def post(self, request):
        return Response({"ok": True, "received": request.data})


class PlanProbe(APIView):
    required_feature = "webhooks"

    def get(self, request):
        return Response({"ok": True})


class BrokenProbe(APIView):
    def get(self, request):
        raise RuntimeError("secret internals: password=hunter2")


urlpatterns = [
    path("probe/scoped", ScopedProbe.as_view()),
    path("probe/plan", PlanProbe.as_view()),
    path("probe/broken", BrokenProbe.as_view()),
    path("", include("config.urls")),
]
handler404 = "api.errors.page_not_found"
handler500 = "api.errors.server_error"
