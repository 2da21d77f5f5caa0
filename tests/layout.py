"""The project's own packages, for the tests that read or import all of its code."""

PACKAGES = (
    "accounts",
    "api",
    "core",
    "dashboard",
    "mcp_server",
    "memories",
    "minds",
    "synapse_site",
    "webhooks",
    "chat",
    "scheduler",
    "connections",
)
