"""/accounts/…: sign-up, log in, log out and password change for the dashboard (sessions)."""

from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.urls import path

from dashboard.views import accounts

urlpatterns = [
    path("login/", accounts.LoginView.as_view(), name="login-page"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("signup/", accounts.signup, name="signup"),
    path(
        "password/",
        accounts.PasswordChangeView.as_view(success_url="/accounts/password/done/"),
        name="password_change",
    ),
    path(
        "password/done/",
        auth_views.PasswordChangeDoneView.as_view(),
        name="password_change_done",
    ),
]
