"""The console's settings of a property: what the owner may change, through the admin API's
model and write."""

from __future__ import annotations

import re
from typing import Any

from .console_visitor import owner_of
from .harness import Harness


async def test_settings_raise_bookings_per_day_and_switch_guest_confirmation(api: Harness) -> None:
    prop = await api.create_property()
    visitor = await owner_of(api, prop)
    path = f"/console/properties/{prop['id']}/settings"
    form = await visitor.get(path)
    assert form.status == 200 and 'aria-current="page">Settings' in form.text
    assert '<label for="bookingsPerDay">' in form.text and '<label for="guestConfirmation">' in form.text
    assert "Now 500 (the default)" in form.text

    saved = await visitor.submit(path, path, {"bookingsPerDay": "800", "guestConfirmation": "on"})
    assert (saved.status, saved.location) == (303, f"{path}?done=saved")
    shown = (await api.admin("GET", f"/properties/{prop['id']}")).data
    assert (shown["bookingsPerDay"], shown["guestConfirmation"]) == (800, True)
    assert "Saved." in (await visitor.get(f"{path}?done=saved")).text

    def refused_with(page: Any, said: str) -> None:
        assert page.status == 400 and said in page.text, (page.status, re.findall(r'role="alert">(.*?)<', page.text))

    # Lowering, a bad value, past the admin model's bound: the form again, and nothing written
    # (not even the other field).
    refused_with(await visitor.submit(path, path, {"bookingsPerDay": "799"}), "can only be raised: at least 800")
    refused_with(await visitor.submit(path, path, {"bookingsPerDay": "12.5"}), "must be a whole number")
    refused_with(await visitor.submit(path, path, {"bookingsPerDay": "-900"}), "must be a whole number")
    refused_with(await visitor.submit(path, path, {"bookingsPerDay": "1000001", "guestConfirmation": "on"}),
                 "less than or equal to 1000000")
    shown = (await api.admin("GET", f"/properties/{prop['id']}")).data
    assert (shown["bookingsPerDay"], shown["guestConfirmation"]) == (800, True)

    # Guest confirmation off, bookings per day kept (empty: unchanged).
    assert (await visitor.submit(path, path, {"bookingsPerDay": ""})).status == 303
    shown = (await api.admin("GET", f"/properties/{prop['id']}")).data
    assert (shown["bookingsPerDay"], shown["guestConfirmation"]) == (800, False)
    # The operator lowers it; the owner's floor follows, never below the default budget.
    await api.admin("PATCH", f"/properties/{prop['id']}", {"bookingsPerDay": 100})
    page = await visitor.get(path)
    assert "Now 500 (the default)" in page.text
    refused_with(await visitor.submit(path, path, {"bookingsPerDay": "400"}), "at least 500")
    assert (await visitor.submit(path, path, {"bookingsPerDay": "500"})).status == 303
    assert (await api.admin("GET", f"/properties/{prop['id']}")).data["bookingsPerDay"] == 500


async def test_a_settings_form_over_the_consoles_cap_writes_nothing(api: Harness) -> None:
    prop = await api.create_property()
    visitor = await owner_of(api, prop)
    path = f"/console/properties/{prop['id']}/settings"
    before = (await api.admin("GET", f"/properties/{prop['id']}")).data
    answer = await visitor.submit(path, path, {"bookingsPerDay": "800", "pad": "x" * 70_000})
    assert answer.status == 413 and "at most 64 KB" in answer.text
    assert (await api.admin("GET", f"/properties/{prop['id']}")).data == before
    assert (await visitor.submit(path, path, {"bookingsPerDay": "800", "pad": "x" * 60_000})).status == 303
