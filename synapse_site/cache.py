"""The default cache: Django's file cache, made safe for the rate-limit counters.

Shared by every worker process of the machine, its add(), incr() and get() run under one
file lock. Design notes: docs/internals.md#the-rate-limit-cache.
"""

from __future__ import annotations

import fcntl
import os
import pickle
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

from django.core.cache.backends.base import DEFAULT_TIMEOUT
from django.core.cache.backends.filebased import FileBasedCache

# Not a *.djcache name: clear() and culling never remove it.
LOCK_NAME = "lock"


class SharedFileCache(FileBasedCache):
    @contextmanager
    def _locked(self) -> Iterator[None]:
        self._createdir()  # type: ignore[attr-defined]  # a private helper of FileBasedCache
        fd = os.open(os.path.join(self._dir, LOCK_NAME), os.O_RDWR | os.O_CREAT, 0o600)  # type: ignore[attr-defined]
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # releases the lock

    def add(
        self, key: Any, value: Any, timeout: float | None = DEFAULT_TIMEOUT, version: Any = None
    ) -> bool:
        with self._locked():
            return super().add(key, value, timeout, version)

    def get(self, key: Any, default: Any = None, version: Any = None) -> Any:
        with self._locked():
            return super().get(key, default, version)

    def incr(self, key: Any, delta: int = 1, version: Any = None) -> Any:
        fname = self._key_to_file(key, version)  # type: ignore[attr-defined]
        with self._locked():
            try:
                with open(fname, "r+b") as f:
                    expiry = pickle.load(f)
                    if expiry is not None and expiry < time.time():
                        raise FileNotFoundError  # expired: as good as gone
                    start = f.tell()
                    value = pickle.loads(zlib.decompress(f.read())) + delta
                    f.seek(start)  # the expiry stays as it was
                    f.write(zlib.compress(pickle.dumps(value, self.pickle_protocol)))
                    f.truncate()
                    return value
            except (FileNotFoundError, EOFError):
                raise ValueError(f"Key '{key}' not found") from None

    # The stubs leave out FileBasedCache's private helpers (_cull, _is_expired, …).
    def _cull(self) -> None:
        files = self._list_cache_files()  # type: ignore[attr-defined]
        if len(files) < self._max_entries:
            return
        for fname in files:
            with suppress(FileNotFoundError), open(fname, "rb") as f:
                self._is_expired(f)  # type: ignore[attr-defined]  # removes it when expired
        super()._cull()  # type: ignore[misc]  # still full: Django drops a random share
