from django.conf import settings
from django.contrib import admin
from django.urls import include, path, re_path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from accounts.api import LoginView, LogoutView, RefreshView, RegisterView
from dashboard.views.accounts import admin_login
from minds.api import MindViewSet
from synapse_site import views
from synapse_site.routers import OptionalSlashRouter

FACES = settings.FACE_PREFIXES
router = OptionalSlashRouter()
router.register("minds", MindViewSet, basename="mind")

urlpatterns = [
    path("", views.guide, name="guide"),
    re_path(r"^health/?$", views.health, name="health"),
    re_path(r"^health/ready/?$", views.health_ready, name="health-ready"),
    re_path(r"^metrics/?$", views.metrics, name="metrics"),
    re_path(r"^register/?$", RegisterView.as_view(), name="register"),
    re_path(r"^login/?$", LoginView.as_view(), name="login"),
    re_path(r"^token/refresh/?$", RefreshView.as_view(), name="token-refresh"),
    re_path(r"^logout/?$", LogoutView.as_view(), name="token-logout"),
    re_path(r"^api/schema/?$", SpectacularAPIView.as_view(), name="schema"),
    # Swagger UI in the site's page and colours; its start-up script is a request of its own.
    re_path(
        r"^api/docs/?$",
        SpectacularSwaggerSplitView.as_view(url_name="schema", template_name="api_docs.html"),
        name="api-docs",
    ),
    # The admin's own log-in page, behind the per-address login rate limit.
    path(FACES["admin"].lstrip("/") + "login/", admin_login),
    path(FACES["admin"].lstrip("/"), admin.site.urls),
    path(FACES["accounts"].lstrip("/"), include("dashboard.account_urls")),
    path(FACES["dashboard"].lstrip("/"), include("dashboard.urls")),
    path(FACES["dashboard"].strip("/"), RedirectView.as_view(url=FACES["dashboard"])),
    path("", include("mcp_server.urls")),
    path("", include("memories.api.urls")),
    path("", include(router.urls)),
]

handler400 = "synapse_site.errors.handler400"
handler403 = "synapse_site.errors.handler403"
handler404 = "synapse_site.errors.handler404"
handler500 = "synapse_site.errors.handler500"
