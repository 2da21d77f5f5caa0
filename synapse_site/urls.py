from django.conf import settings
from django.contrib import admin
from django.urls import include, path, re_path
from django.views.generic import RedirectView

from dashboard.views.accounts import admin_login, admin_password_change
from dashboard.views.oauth import ConsentView
from mcp_server.urls import oauth_urlpatterns
from synapse_site import views

FACES = settings.FACE_PREFIXES

urlpatterns = [
    path("", views.guide, name="guide"),
    re_path(r"^health/?$", views.health, name="health"),
    re_path(r"^health/ready/?$", views.health_ready, name="health-ready"),
    re_path(r"^metrics/?$", views.metrics, name="metrics"),
    # The admin's own log-in page, behind the per-address login rate limit.
    path(FACES["admin"].lstrip("/") + "login/", admin_login),
    # Its password change, whose old password counts toward the same lockout as a login.
    path(
        FACES["admin"].lstrip("/") + "password_change/",
        admin_password_change,
        name="admin-password-change",
    ),
    path(FACES["admin"].lstrip("/"), admin.site.urls),
    path(FACES["accounts"].lstrip("/"), include("dashboard.account_urls")),
    # OAuth for /mcp: the library's namespace, with the dashboard's consent page as the
    # authorization endpoint (mcp_server/urls.py holds the rest).
    path(
        "",
        include(
            (
                [
                    path(
                        FACES["dashboard"].lstrip("/") + "connect/",
                        ConsentView.as_view(),
                        name="authorize",
                    ),
                    *oauth_urlpatterns,
                ],
                "oauth2_provider",
            )
        ),
    ),
    path(FACES["dashboard"].lstrip("/"), include("dashboard.urls")),
    path(FACES["dashboard"].strip("/"), RedirectView.as_view(url=FACES["dashboard"])),
    path("", include("mcp_server.urls")),
    path("", include("api.urls")),
]

handler400 = "synapse_site.errors.handler400"
handler403 = "synapse_site.errors.handler403"
handler404 = "synapse_site.errors.handler404"
handler500 = "synapse_site.errors.handler500"
