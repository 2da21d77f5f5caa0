"""`manage.py run_huey`: huey's consumer (huey.contrib.djhuey's command, which this one stands
in for), ended without the C++ libraries' exit handlers (synapse_site/exits.py).

On SIGTERM huey's consumer returns at once and leaves its worker thread where it was, maybe
loading the model or embedding; a normal exit would then abort in onnxruntime.
"""

from __future__ import annotations

from typing import Any

from huey.contrib.djhuey.management.commands.run_huey import (
    Command as HueyCommand,
)

from synapse_site.exits import exit_now


class Command(HueyCommand):  # type: ignore[misc]
    def handle(self, *args: Any, **options: Any) -> None:
        super().handle(*args, **options)
        exit_now(0)
