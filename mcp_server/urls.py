from django.urls import re_path

from mcp_server.views import mcp_endpoint

urlpatterns = [
    re_path(r"^mcp/?$", mcp_endpoint, name="mcp"),
]
