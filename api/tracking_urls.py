"""The URLs a domain's own tracking host serves (api.tracking_host): the open pixel and click redirect."""
from django.urls import path

from api.views import tracking

urlpatterns = [
    path("t/o/<str:token>.gif", tracking.tracking_pixel, name="tracking-open"),
    path("t/c/<str:token>", tracking.tracking_redirect, name="tracking-click"),
]
