"""gunicorn settings for `make run`, driven by the same environment variables as Django."""

import os

bind = f"{os.environ.get('HOST', '127.0.0.1')}:{os.environ.get('PORT', '8000')}"
workers = int(os.environ.get("WEB_CONCURRENCY", "2"))
accesslog = "-"
errorlog = "-"
# Agents keep connections short; a slow client must not pin a worker forever.
timeout = 30
graceful_timeout = 10
