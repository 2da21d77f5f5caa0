"""core/sealed.py: sealed at rest, readable under the current or a fallback SECRET_KEY."""

from __future__ import annotations

import pytest

from core.sealed import Unsealable, seal, unseal


def test_a_sealed_value_reads_back_and_does_not_hold_the_text():
    sealed = seal("whsec_c2VjcmV0")
    assert "whsec_" not in sealed and "c2VjcmV0" not in sealed
    assert unseal(sealed) == "whsec_c2VjcmV0"


def test_a_changed_secret_key_reads_it_while_the_old_one_is_a_fallback(settings):
    sealed = seal("s3cret-value")
    old = settings.SECRET_KEY
    settings.SECRET_KEY = "another-" + old
    with pytest.raises(Unsealable, match="SECRET_KEY_FALLBACKS"):
        unseal(sealed)
    settings.SECRET_KEY_FALLBACKS = [old]
    assert unseal(sealed) == "s3cret-value"
