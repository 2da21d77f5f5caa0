from synapse_site.routers import OptionalSlashRouter

router = OptionalSlashRouter()

urlpatterns = [*router.urls]
