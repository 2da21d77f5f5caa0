"""Why no vector could be had: the operator's problem (a file, a server), never the caller's."""

from __future__ import annotations


class EmbeddingsError(Exception):
    """The embedder cannot load or answer; the message says what is wrong and where.

    `reason` is what went wrong without the where (no URL): short enough to keep beside a
    job the embedder refused (EmbeddingJob.last_error), for the operator."""

    def __init__(self, message: str, *, reason: str = "") -> None:
        super().__init__(message)
        self.reason = reason or message


class ModelFileRefused(EmbeddingsError):
    """A model or tokenizer file is not the exact file the code pins."""

    def __init__(self, path: str, *, expected: str, actual: str) -> None:
        super().__init__(
            f"Refusing the embedding model file {path}: its SHA-256 is {actual}, but this "
            f"version of Synapse pins {expected}. Reinstall the locked packages "
            "(`make install`) or restore the file from the repository."
        )
        self.path = path
        self.expected = expected
        self.actual = actual
