from django.urls import re_path

from memories.api import MemoryViewSet
from memories.recall_api import RecallView
from memories.search.api import MemorySearchView
from synapse_site.routers import OptionalSlashRouter

router = OptionalSlashRouter()
router.register("memory", MemoryViewSet, basename="memory")

urlpatterns = [
    re_path(r"^memory/recall/?$", RecallView.as_view(), name="memory-recall"),
    re_path(r"^memory/search/?$", MemorySearchView.as_view(), name="memory-search"),
    *router.urls,
]
