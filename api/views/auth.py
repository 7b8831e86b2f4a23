"""POST /auth/login and /auth/logout: bearer session tokens for browser and mobile clients."""
from django.contrib.auth import logout
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from api.inputs import StrictInput
from api.authentication import SESSION_ONLY, credential_refused, request_client_ip
from mailcore.apikeys.models import SessionToken
from mailcore.apikeys.services import CredentialRejected
from mailcore.apikeys.sessions import session_login, session_token_revoke


class LoginInput(StrictInput):
    email = serializers.EmailField()
    password = serializers.CharField(trim_whitespace=False)


class LoginOutput(serializers.Serializer):
    token = serializers.CharField()
    expires_at = serializers.DateTimeField()


class AuthLoginApi(APIView):
    authentication_classes: list = []
    permission_classes = [AllowAny]

    def get_authenticate_header(self, request):
        return 'Bearer realm="api"'  # so that a wrong password is 401, not 403

    @extend_schema(
        tags=["auth"],
        request=LoginInput,
        responses={200: LoginOutput},
        summary="Log in with email and password",
        description="Returns a bearer token for session-only endpoints, valid until it expires, is "
        "logged out, or the user's password is changed or reset (then 401: log in again). Wrong "
        "credentials give 401; 5 failures for one email, or 100 from one client address, within "
        "15 minutes (the defaults) give 429 with Retry-After.",
    )
    def post(self, request):
        data = LoginInput(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            token, raw = session_login(client_ip=request_client_ip(request), **data.validated_data)
        except CredentialRejected as exc:
            raise credential_refused(exc) from None
        return Response(LoginOutput({"token": raw, "expires_at": token.expires_at}).data)


class AuthLogoutApi(APIView):
    authentication_classes = SESSION_ONLY
    permission_classes = [IsAuthenticated]

    @extend_schema(
        tags=["auth"],
        request=None,
        responses={204: None},
        summary="Log out",
        description="Revokes the bearer token used for this request (or ends the cookie session).",
    )
    def post(self, request):
        if isinstance(request.auth, SessionToken):
            session_token_revoke(token=request.auth)
        else:
            logout(request._request)
        return Response(status=204)


