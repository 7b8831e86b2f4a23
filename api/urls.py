from django.urls import path
from drf_spectacular.views import SpectacularJSONAPIView, SpectacularSwaggerView

from api.views import api_keys, auth, subscriptions

urlpatterns = [
    path("auth/login", auth.AuthLoginApi.as_view(), name="auth-login"),
    path("auth/logout", auth.AuthLogoutApi.as_view(), name="auth-logout"),
    path("api-keys", api_keys.ApiKeyListCreateApi.as_view(), name="api-keys"),
    path("api-keys/<int:key_id>", api_keys.ApiKeyDetailApi.as_view(), name="api-key"),
    path("api-keys/<int:key_id>/usage", api_keys.ApiKeyUsageApi.as_view(), name="api-key-usage"),
    path("subscriptions/me", subscriptions.SubscriptionMeApi.as_view(), name="subscription-me"),
    path("openapi.json", SpectacularJSONAPIView.as_view(), name="openapi"),
    path("docs", SpectacularSwaggerView.as_view(url_name="openapi"), name="api-docs"),
]
