from django.urls import re_path

from memories.recall_api import RecallView
from synapse_site.routers import OptionalSlashRouter

router = OptionalSlashRouter()

urlpatterns = [
    re_path(r"^memory/recall/?$", RecallView.as_view(), name="memory-recall"),
    *router.urls,
]
