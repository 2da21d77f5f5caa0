"""The API face of the memory core: DRF views, their query parameters, the schema's
serializers, and Idempotency-Key. It speaks HTTP; the core below it does not."""
