from rest_framework.routers import SimpleRouter


class OptionalSlashRouter(SimpleRouter):
    """Routes that answer both `/memory` (as the public client calls) and `/memory/`."""

    def __init__(self) -> None:
        super().__init__()
        self.trailing_slash = "/?"
