"""POST /register, /login and /token/refresh."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import authenticate
from django.contrib.auth.base_user import AbstractBaseUser
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.authentication import BaseAuthentication
from rest_framework.exceptions import APIException, PermissionDenied
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView
from rest_framework_simplejwt.tokens import RefreshToken
from rest_framework_simplejwt.views import TokenRefreshView

from accounts.serializers import (
    LoginSerializer,
    RegisterResponseSerializer,
    RegisterSerializer,
    TokenPairSerializer,
    UserSerializer,
)
from accounts.services import user_register
from synapse_site.throttling import LoginRateThrottle


class WrongCredentials(APIException):
    # Not AuthenticationFailed: DRF turns that into 403 on views without authenticators.
    status_code = status.HTTP_401_UNAUTHORIZED
    default_detail = "Email or password is wrong."
    default_code = "authentication_failed"


def token_pair(user: AbstractBaseUser) -> dict[str, str]:
    refresh = RefreshToken.for_user(user)
    return {"access": str(refresh.access_token), "refresh": str(refresh)}


class RegisterView(APIView):
    authentication_classes: list[type[BaseAuthentication]] = []
    permission_classes = [AllowAny]
    throttle_classes = [LoginRateThrottle]

    @extend_schema(request=RegisterSerializer, responses={201: RegisterResponseSerializer})
    def post(self, request: Request) -> Response:
        if not settings.SYNAPSE_ALLOW_REGISTRATION:
            raise PermissionDenied("Registration is closed on this server; ask an admin.")
        serializer = RegisterSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        user = user_register(**serializer.validated_data)
        body = {"user": UserSerializer(user).data, **token_pair(user)}
        return Response(body, status=status.HTTP_201_CREATED)


class LoginView(APIView):
    authentication_classes: list[type[BaseAuthentication]] = []
    permission_classes = [AllowAny]
    throttle_classes = [LoginRateThrottle]

    @extend_schema(request=LoginSerializer, responses={200: TokenPairSerializer})
    def post(self, request: Request) -> Response:
        serializer = LoginSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        user = authenticate(
            request,
            username=serializer.validated_data["email"],
            password=serializer.validated_data["password"],
        )
        if user is None:
            raise WrongCredentials()
        return Response(token_pair(user))


class RefreshView(TokenRefreshView):
    authentication_classes = ()
    throttle_classes = [LoginRateThrottle]
