from __future__ import annotations

from django.conf import settings
from django.http import JsonResponse

from synapse_site.errors import error_body


class BodySizeLimitMiddleware:
    """Answer 413 before reading a body larger than SYNAPSE_MAX_BODY_BYTES.

    DRF's parsers read the request stream directly, which skips Django's own size check.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        if limit is not None and length > limit:
            return JsonResponse(
                error_body(
                    "payload_too_large",
                    f"The request body is {length} bytes; this server accepts at most {limit}.",
                ),
                status=413,
            )
        return self.get_response(request)
