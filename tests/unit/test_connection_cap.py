import resource

from connectapi.http.connections import RESERVED_FILES, connection_cap


def test_the_cap_leaves_files_for_everything_else() -> None:
    assert connection_cap(50) == 50
    capped = connection_cap(10**7)
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)  # raised to the hard limit by the call
    if soft != resource.RLIM_INFINITY:
        assert capped <= max(soft - RESERVED_FILES, 10)
    assert capped >= 10
