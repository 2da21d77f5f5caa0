"""POST /register, /login, /token/refresh and /logout."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import authenticate, user_logged_in
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.authentication import BaseAuthentication
from rest_framework.exceptions import APIException, PermissionDenied, Throttled
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.models import User
from accounts.services import user_register
from api.serializers import (
    AccessSerializer,
    LoginSerializer,
    LogoutResponseSerializer,
    RefreshSerializer,
    RegisterResponseSerializer,
    RegisterSerializer,
    TokenPairSerializer,
)
from api.tokens import access_token_refresh, refresh_token_revoke, tokens_for
from minds.services import share_claim
from synapse_site.lockout import cool_off_seconds
from synapse_site.throttling import LoginRateThrottle


class WrongCredentials(APIException):
    # Not AuthenticationFailed: DRF turns that into 403 on views without authenticators.
    status_code = status.HTTP_401_UNAUTHORIZED
    default_detail = "Email or password is wrong."
    default_code = "authentication_failed"


REGISTERED = (
    "Thank you. If this address had no account, it has one now: log in with POST /login to "
    "get your tokens. An address that already has an account is left as it was."
)


class RegisterView(APIView):
    authentication_classes: list[type[BaseAuthentication]] = []
    permission_classes = [AllowAny]
    throttle_classes = [LoginRateThrottle]

    @extend_schema(request=RegisterSerializer, responses={202: RegisterResponseSerializer})
    def post(self, request: Request) -> Response:
        if not settings.SYNAPSE_ALLOW_REGISTRATION:
            raise PermissionDenied("Registration is closed on this server; ask an admin.")
        serializer = RegisterSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        # The same answer for a new and a taken address: who has an account is not told.
        user_register(**serializer.validated_data)
        return Response({"detail": REGISTERED}, status=status.HTTP_202_ACCEPTED)


class LoginView(APIView):
    authentication_classes: list[type[BaseAuthentication]] = []
    permission_classes = [AllowAny]
    throttle_classes = [LoginRateThrottle]

    @extend_schema(request=LoginSerializer, responses={200: TokenPairSerializer})
    def post(self, request: Request) -> Response:
        serializer = LoginSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        # The request goes along: the lockout (django-axes) counts failures by address.
        user = authenticate(
            request,  # DRF's Request stands in for Django's (axes reads META and POST)
            username=serializer.validated_data["email"],
            password=serializer.validated_data["password"],
        )
        if getattr(request, "axes_locked_out", False):
            wait = cool_off_seconds()
            raise Throttled(
                wait=wait,
                detail=(
                    "Too many failed logins for this email from your address: logins for it "
                    f"from here are refused for {wait // 60} minutes."
                ),
            )
        if not isinstance(user, User):
            raise WrongCredentials()
        # As a session login does: clears the failure count and records last_login.
        user_logged_in.send(sender=User, request=request, user=user)
        share_claim(user=user)
        return Response(tokens_for(user=user))


class TokenView(APIView):
    """A view that takes a refresh token in its body: a bad one is a 401, not a 403."""

    authentication_classes: list[type[BaseAuthentication]] = []
    permission_classes = [AllowAny]

    def get_authenticate_header(self, request: Request) -> str:
        # Without it DRF answers AuthenticationFailed with 403 on a view with no authenticators.
        return 'Bearer realm="synapse"'


class RefreshView(TokenView):
    throttle_classes = [LoginRateThrottle]

    @extend_schema(request=RefreshSerializer, responses={200: AccessSerializer})
    def post(self, request: Request) -> Response:
        serializer = RefreshSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        access = access_token_refresh(refresh=serializer.validated_data["refresh"])
        return Response({"access": access})


class LogoutView(TokenView):
    """End a refresh token and every access token made from it."""

    @extend_schema(request=RefreshSerializer, responses={200: LogoutResponseSerializer})
    def post(self, request: Request) -> Response:
        serializer = RefreshSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        refresh_token_revoke(refresh=serializer.validated_data["refresh"])
        return Response({"logged_out": True})
