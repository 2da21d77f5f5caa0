"""Tell the OpenAPI schema how our two bearer credentials look."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class MindKeyScheme(OpenApiAuthenticationExtension):
    target_class = "minds.authentication.MindKeyAuthentication"
    name = "MindKey"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An agent's Mind Key: `Authorization: Bearer mk_…`.",
        }


class UserJWTScheme(OpenApiAuthenticationExtension):
    target_class = "accounts.authentication.BearerJWTAuthentication"
    name = "UserJWT"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "JWT",
            "description": "A person's access token from POST /login.",
        }
