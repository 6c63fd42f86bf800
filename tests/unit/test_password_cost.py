"""The console's passwords are hashed at RFC 9106's second recommended cost (argon2id, three
passes over 64 MiB): the API tests hash cheaper (tests/api/conftest.py), the service never."""

from __future__ import annotations

from argon2 import Type

from connectapi.http.console.auth import HASHER


def test_the_service_hashes_passwords_with_argon2id_at_the_recommended_cost() -> None:
    assert HASHER.type is Type.ID
    assert HASHER.time_cost >= 3 and HASHER.memory_cost >= 64 * 1024 and HASHER.parallelism >= 1
    assert HASHER.hash("correct horse").startswith("$argon2id$v=19$m=65536,t=3,")
