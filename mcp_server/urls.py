from django.urls import path, re_path
from oauth2_provider import views as oauth2

from mcp_server.oauth import (
    RESOURCE_METADATA_PATH,
    RegistrationManagementView,
    ResourceMetadataView,
    TokenView,
    register,
)
from mcp_server.views import mcp_endpoint

urlpatterns = [
    re_path(r"^mcp/?$", mcp_endpoint, name="mcp"),
]

# OAuth for remote MCP clients, under the OAuth library's URL names (its views reverse them);
# the authorization endpoint is the dashboard's consent page (synapse_site/urls.py).
oauth_urlpatterns = [
    path(
        ".well-known/oauth-protected-resource",
        ResourceMetadataView.as_view(),
        name="resource-metadata-root",
    ),
    path(
        RESOURCE_METADATA_PATH.lstrip("/"), ResourceMetadataView.as_view(), name="resource-metadata"
    ),
    path(
        ".well-known/oauth-authorization-server",
        oauth2.OAuthServerMetadataView.as_view(),
        name="oauth-server-metadata",
    ),
    re_path(r"^oauth/register/?$", register, name="dcr-register"),
    path(
        "oauth/register/<str:client_id>",
        RegistrationManagementView.as_view(),
        name="dcr-register-management",
    ),
    re_path(r"^oauth/token/?$", TokenView.as_view(), name="token"),
    re_path(r"^oauth/revoke/?$", oauth2.RevokeTokenView.as_view(), name="revoke-token"),
]
