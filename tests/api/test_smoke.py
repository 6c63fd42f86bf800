from .harness import API, Harness


async def test_property_round_trip(api: Harness) -> None:
    prop, key = await api.keyed_property()
    answer = await api.call("GET", f"{API}/property", key=key)
    assert answer.status == 200, answer.body
    assert answer.data["id"] == prop["id"]
