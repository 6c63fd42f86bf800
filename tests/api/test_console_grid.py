"""The console's channel grid: the record beside the (sandbox) channel manager, differences
marked, the batches still to push; a channel manager that cannot be read leaves the record."""

from __future__ import annotations

import re
from datetime import date
from typing import Any

import pytest

from .console_visitor import owner_of
from .harness import API, Harness
from .test_pipeline import settled

PUSHING = {"CONNECTAPI_PUSH_PAUSED": "0"}
CELL = re.compile(r'<td( class="differs")?>(.*?)</td>', re.S)


def night_row(text: str, room_type_id: int, night: str) -> list[tuple[bool, str]]:
    """The cells of one night in a room type's table: (marked as differing, text), in order:
    availability R and CM, then per rate plan its rate R and CM, restrictions R and CM."""
    section = text.split(f'<h2 id="room-{room_type_id}">', 1)[1].split("</section>", 1)[0]
    row = re.search(rf'<th scope="row">\w+ {night}</th>(.*?)</tr>', section, re.S)
    assert row, f"no row for {night}"
    return [(bool(marked), re.sub(r"\s+", " ", value).strip()) for marked, value in CELL.findall(row.group(1))]


async def write_rate(api: Harness, key: str, plan: int, night: str, rate: str) -> dict[str, Any]:
    answer = await api.call("PUT", f"{API}/rates", key=key, body={"updates": [
        {"ratePlanId": plan, "dateFrom": night, "dateTo": night, "rate": rate, "currency": "EUR"}]})
    assert answer.status == 202, answer.body
    return dict(answer.data)


@pytest.mark.parametrize("env", [PUSHING])
async def test_a_rate_written_through_the_api_shows_beside_the_channel_manager_s_once_pushed(api: Harness) -> None:
    prop, key = await api.keyed_property()
    room, plan = prop["roomTypes"][0]["id"], prop["ratePlans"][0]["id"]
    await write_rate(api, key, plan, "2026-11-23", "99")
    await settled(api, prop["id"])
    visitor = await owner_of(api, prop)

    page = await visitor.get(f"/console/properties/{prop['id']}/grid")  # the next 14 nights by default
    assert page.status == 200 and 'aria-current="page">Channel grid' in page.text
    assert 'value="2026-11-22"' in page.text and 'value="2026-12-05"' in page.text
    assert "2026-12-06" not in page.text
    assert night_row(page.text, room, "2026-11-23") == [
        (False, "8"), (False, "8"),  # the room type's rooms, pushed when it was made
        (False, "99.00"), (False, "99.00"),
        (False, "—"), (False, "none")]  # the record has no restriction there: the channel none
    assert '<td class="differs">' not in page.text and "0 value(s) differ." in page.text
    assert "None: every write has reached the channel manager." in page.text

    # Changed on the channel manager behind our back: marked, with words, not colour alone.
    assert api.ctx.channel.sandbox is not None
    cm_plan = await api.ctx.db.fetchval("SELECT cm_id FROM rate_plans WHERE id = $1", plan)
    held = next(p for p in api.ctx.channel.sandbox.properties.values() if p.title == prop["name"])
    held.restrictions[cm_plan][date(2026, 11, 23)]["rate"] = "80.00"
    page = await visitor.get(f"/console/properties/{prop['id']}/grid?from=2026-11-23&to=2026-11-23")
    assert night_row(page.text, room, "2026-11-23")[2:4] == [(False, "99.00"), (True, "80.00 <strong>(differs)</strong>")]


async def test_a_rate_not_pushed_yet_is_marked_with_its_pending_batch(api: Harness) -> None:
    """Pushes are held (the API tests' default): the record has it, the channel manager not yet."""
    prop, key = await api.keyed_property()
    room, plan = prop["roomTypes"][0]["id"], prop["ratePlans"][0]["id"]
    written = await write_rate(api, key, plan, "2026-11-24", "120")
    visitor = await owner_of(api, prop)
    page = await visitor.get(f"/console/properties/{prop['id']}/grid?from=2026-11-23&to=2026-11-25")
    assert page.status == 200
    assert night_row(page.text, room, "2026-11-24")[2:4] == [(False, "120.00"), (True, "— <strong>(differs)</strong>")]
    assert night_row(page.text, room, "2026-11-23")[2:4] == [(False, "—"), (False, "—")]  # nothing either side
    assert "1 value(s) differ." in page.text
    batches = page.text.split('id="batches"', 1)[1]
    assert f"<code>{written['batchId']}</code>" in batches and "<td>rates</td>" in batches
    assert "<td>1</td>" in batches  # its one cell still to push
    assert "trace <code>" not in batches  # written with tracing off: no trace to name
    # Written under a traced request (decision 0141): the trace's id shows beside the batch, to copy.
    await api.ctx.db.execute("UPDATE write_batches SET trace_parent = $2 WHERE id = $1::uuid", written["batchId"],
                             "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
    page = await visitor.get(f"/console/properties/{prop['id']}/grid?from=2026-11-23&to=2026-11-25")
    batches = page.text.split('id="batches"', 1)[1]
    assert "trace <code>4bf92f3577b34da6a3ce929d0e0e4736</code>" in batches


async def test_the_range_is_validated(api: Harness) -> None:
    prop = await api.create_property()
    visitor = await owner_of(api, prop)
    base = f"/console/properties/{prop['id']}/grid"
    for query, said in (("?from=2026-11-23&to=2027-01-22", "at most 60 nights"),
                        ("?from=2026-11-25&to=2026-11-24", "must not be before"),
                        ("?from=tomorrow&to=2026-11-24", "YYYY-MM-DD")):
        page = await visitor.get(base + query)
        assert page.status == 400 and said in page.text, (query, page.status)
        assert 'value="2026-11-22"' in page.text  # the default range is shown instead
    sixty = await visitor.get(base + "?from=2026-11-23&to=2027-01-21")
    assert sixty.status == 200 and "2027-01-21" in sixty.text and "2027-01-22" not in sixty.text


async def test_a_channel_manager_that_cannot_be_read_leaves_the_record_with_a_note(api: Harness) -> None:
    prop, key = await api.keyed_property()
    room, plan = prop["roomTypes"][0]["id"], prop["ratePlans"][0]["id"]
    await write_rate(api, key, plan, "2026-11-24", "99")
    visitor = await owner_of(api, prop)
    assert api.ctx.channel.sandbox is not None
    cm_property = await api.ctx.db.fetchval("SELECT cm_property_id FROM properties WHERE id = $1", prop["id"])
    held = api.ctx.channel.sandbox.properties.pop(cm_property)  # the channel manager no longer knows it
    try:
        page = await visitor.get(f"/console/properties/{prop['id']}/grid?from=2026-11-24&to=2026-11-24")
    finally:
        api.ctx.channel.sandbox.properties[cm_property] = held
    assert page.status == 200 and "could not be read just now" in page.text
    assert night_row(page.text, room, "2026-11-24")[2:4] == [(False, "99.00"), (False, "—")]  # nothing marked

    await api.ctx.db.execute("UPDATE properties SET cm_property_id = NULL WHERE id = $1", prop["id"])
    page = await visitor.get(f"/console/properties/{prop['id']}/grid?from=2026-11-24&to=2026-11-24")
    assert page.status == 200 and "not mapped to the channel manager" in page.text
    assert night_row(page.text, room, "2026-11-24")[2] == (False, "99.00")


@pytest.mark.parametrize("env", [PUSHING])
async def test_values_the_channel_manager_refused_show_on_the_overview_and_the_grid(api: Harness) -> None:
    from connectapi.channel.sandbox.state import Refusal

    from .harness import eventually
    from .test_channel_refusals import cm_ids, quiet

    prop, key = await api.keyed_property()
    plan = prop["ratePlans"][0]
    cm_property, plans = cm_ids(api, prop)
    assert api.ctx.channel.sandbox is not None
    api.ctx.channel.sandbox.refuse(cm_property, plans[plan["name"]], Refusal("rate", "must be greater than 0"))
    await write_rate(api, key, plan["id"], "2026-11-24", "99")
    await eventually(lambda: api.ctx.channel.sandbox.stats.refused == 1, "the refusal")  # type: ignore[union-attr]
    await quiet(api, prop["id"], "rates", 1)
    visitor = await owner_of(api, prop)
    overview = await visitor.get(f"/console/properties/{prop['id']}")
    assert overview.status == 200
    assert '<span class="state state-refused">refused</span>' in overview.text
    assert "Refused by the channel manager" in overview.text and "0 availability, 1 rates, 0 restrictions" \
        in overview.text
    page = await visitor.get(f"/console/properties/{prop['id']}/grid")
    refused = page.text.split('<h2 id="refused">', 1)[1].split("</table>", 1)[0]
    assert f"<td>{plan['name']}</td><td>2026-11-24 to 2026-11-24</td><td>1</td>" in refused
    assert '<td class="error">rate: must be greater than 0</td>' in refused


@pytest.mark.parametrize("env", [PUSHING])
async def test_a_per_person_plan_shows_each_occupancys_price_on_both_sides(api: Harness) -> None:
    prop, key = await api.keyed_property(name="Casa Pessoa", ratePlans=[
        {"roomType": 0, "name": "Double per person", "mealPlan": "BB", "sellMode": "perPerson"}])
    room, plan = prop["roomTypes"][0]["id"], prop["ratePlans"][0]["id"]
    answer = await api.call("PUT", f"{API}/rates", key=key, body={"updates": [
        {"ratePlanId": plan, "occupancy": n, "dateFrom": "2026-11-23", "dateTo": "2026-11-23", "rate": rate,
         "currency": "EUR"} for n, rate in ((1, "70"), (2, "85"))]})
    assert answer.status == 202, answer.body
    await settled(api, prop["id"])
    visitor = await owner_of(api, prop)
    page = await visitor.get(f"/console/properties/{prop['id']}/grid?from=2026-11-23&to=2026-11-23")
    assert "Double per person (per person: adults: price)</th>" in page.text
    assert night_row(page.text, room, "2026-11-23")[2:4] == [(False, "1: 70.00 · 2: 85.00"),
                                                             (False, "1: 70.00 · 2: 85.00")]
    # One occupancy changed on the channel manager: the night differs, marked.
    assert api.ctx.channel.sandbox is not None
    cm_plan = await api.ctx.db.fetchval("SELECT cm_id FROM rate_plans WHERE id = $1", plan)
    held = next(p for p in api.ctx.channel.sandbox.properties.values() if p.title == "Casa Pessoa")
    held.restrictions[cm_plan][date(2026, 11, 23)]["rates"][2] = "90.00"
    page = await visitor.get(f"/console/properties/{prop['id']}/grid?from=2026-11-23&to=2026-11-23")
    assert night_row(page.text, room, "2026-11-23")[2:4] == [
        (False, "1: 70.00 · 2: 85.00"), (True, "1: 70.00 · 2: 90.00 <strong>(differs)</strong>")]
