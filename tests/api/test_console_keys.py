"""The console's API keys screen (issue 19): keys made, narrowed, fenced, rotated and revoked
in the console do that on the API; the secret is shown once; an owner reaches only its own
properties' keys; every form needs its token."""

from __future__ import annotations

import re
import sys
from typing import Any
from urllib.parse import urlencode

import pytest

from connectapi.domain import api_keys as keyfmt
from connectapi.storage.api_keys import MAX_LIVE_KEYS

from .console_visitor import Page, Visitor, owner_of
from .harness import API, Harness

SECRET = re.compile(r'<code id="key-secret">(cak_live_[A-Za-z0-9_-]{43})</code>')
KEY_LINK = re.compile(r'/console/properties/\d+/keys/(\d+)"')


def keys_of(property_id: int) -> str:
    return f"/console/properties/{property_id}/keys"


async def send(visitor: Visitor, path: str, fields: list[tuple[str, str]]) -> Page:
    """A form post with repeated fields (the scope checkboxes), as a browser sends it."""
    sent: dict[str, Any] = {"data": urlencode(fields).encode(),
                            "headers": {"Content-Type": "application/x-www-form-urlencoded"},
                            "scope_base": {"client": (visitor.address, 40000)}}
    response = await visitor.client.open(path, method="POST", **sent)
    return Page(response.status_code, await response.get_data(as_text=True), response.headers)


def key_form(csrf: str | None, label: str, scopes: list[str], allowlist: str = "") -> list[tuple[str, str]]:
    fields = [("csrf", csrf)] if csrf is not None else []
    return [*fields, ("label", label), *[("scopes", s) for s in scopes], ("allowlist", allowlist)]


async def token(visitor: Visitor, property_id: int) -> str:
    shown = await visitor.get(keys_of(property_id))
    assert shown.status == 200, shown.text[:500]
    return shown.csrf()


async def create(visitor: Visitor, property_id: int, label: str, scopes: list[str],
                 allowlist: str = "") -> tuple[int, str, Page]:
    """A key made through the console's form: its id, its secret, the answer page."""
    answer = await send(visitor, keys_of(property_id),
                        key_form(await token(visitor, property_id), label, scopes, allowlist))
    assert answer.status == 201, answer.text[:3000]
    secret, link = SECRET.search(answer.text), KEY_LINK.search(answer.text)
    assert secret and link, answer.text[:3000]
    return int(link.group(1)), secret.group(1), answer


async def edit(visitor: Visitor, property_id: int, key_id: int, label: str, scopes: list[str],
               allowlist: str = "") -> Page:
    path = f"{keys_of(property_id)}/{key_id}"
    shown = await visitor.get(path)
    assert shown.status == 200, shown.text[:500]
    return await send(visitor, path, key_form(shown.csrf(), label, scopes, allowlist))


async def test_a_key_made_in_the_console_works_on_the_api_and_its_secret_is_shown_once(api: Harness) -> None:
    prop = await api.create_property()
    visitor = await owner_of(api, prop)
    empty = await visitor.get(keys_of(prop["id"]))
    assert empty.status == 200 and "No key yet" in empty.text and 'aria-current="page">API keys' in empty.text

    key_id, secret, answer = await create(visitor, prop["id"], "PMS sync", ["ari:read", "bookings:read"])
    assert 'data-copy="#key-secret"' in answer.text and "shown this once" in answer.text
    assert answer.headers["Cache-Control"] == "no-store"
    used = await api.call("GET", f"{API}/property", key=secret)
    assert used.status == 200 and used.data["id"] == prop["id"]
    assert used.data["scopes"] == ["ari:read", "bookings:read"]

    listed = await visitor.get(keys_of(prop["id"]))
    assert listed.status == 200 and "PMS sync" in listed.text and secret[:13] in listed.text
    assert "bookings:read" in listed.text and "any address" in listed.text
    one = await visitor.get(f"{keys_of(prop['id'])}/{key_id}")
    assert one.status == 200 and "PMS sync" in one.text
    for page in (listed, one, await visitor.get(f"/console/properties/{prop['id']}")):
        assert secret not in page.text and secret[13:] not in page.text
    made = (await api.admin("GET", f"/properties/{prop['id']}/keys")).data
    assert [(k["id"], k["label"], k["scopes"]) for k in made] == [(key_id, "PMS sync", ["ari:read", "bookings:read"])]


async def test_narrowed_scopes_are_refused_by_the_api(api: Harness) -> None:
    prop = await api.create_property()
    visitor = await owner_of(api, prop)
    key_id, secret, _ = await create(visitor, prop["id"], "PMS", ["ari:read", "bookings:read"])
    assert (await api.call("GET", f"{API}/sync", key=secret)).status == 200

    saved = await edit(visitor, prop["id"], key_id, "PMS, bookings only", ["bookings:read"])
    assert saved.status == 303 and saved.location == f"{keys_of(prop['id'])}/{key_id}?done=saved"
    answer = await api.call("GET", f"{API}/sync", key=secret)
    assert (answer.status, answer.code) == (403, "SCOPE_MISSING")
    assert answer.data["details"] == {"needed": "ari:read", "held": ["bookings:read"]}
    shown = await visitor.get(saved.location)
    assert "Key saved." in shown.text and "PMS, bookings only" in shown.text


async def test_the_forms_refuse_what_the_admin_api_refuses_and_show_it_again(api: Harness) -> None:
    prop = await api.create_property()
    visitor = await owner_of(api, prop)
    path = keys_of(prop["id"])
    for label, scopes, allowlist, said in (
        ("PMS", ["bookings:read", "bookings:payments"], "", "bookings:payments needs bookings:write"),
        ("PMS", ["ari:read", "admin:all"], "", "unknown scopes"),
        ("PMS", ["ari:read"], "203.0.113.7\n10.0.0.300", "10.0.0.300"),
        ("PMS", ["ari:read"], "\n".join(f"203.0.113.{i}" for i in range(21)), "at most 20"),
        ("   ", ["ari:read"], "", "Label: 1 to 80 characters"),
        ("x" * 81, ["ari:read"], "", "Label: 1 to 80 characters"),
    ):
        refused = await send(visitor, path, key_form(await token(visitor, prop["id"]), label, scopes, allowlist))
        assert refused.status == 400 and said in refused.text and 'role="alert"' in refused.text, \
            (label, scopes, refused.status, refused.text[:2000])
        assert "The key was not created" in refused.text and SECRET.search(refused.text) is None
    again = await send(visitor, path, key_form(await token(visitor, prop["id"]), "Kept label", ["admin:all"],
                                               "203.0.113.0/24"))
    assert 'value="Kept label"' in again.text and ">203.0.113.0/24</textarea>" in again.text
    assert (await api.admin("GET", f"/properties/{prop['id']}/keys")).data == []

    key_id, secret, _ = await create(visitor, prop["id"], "PMS", ["ari:read"])
    refused = await edit(visitor, prop["id"], key_id, "PMS", ["ari:read"], "not-an-address")
    assert refused.status == 400 and "The key was not saved" in refused.text and "not-an-address" in refused.text
    assert (await api.call("GET", f"{API}/sync", key=secret)).status == 200  # unchanged: no allowlist

    for _ in range(MAX_LIVE_KEYS - 1):
        await create(visitor, prop["id"], "More", ["ari:read"])
    over = await send(visitor, path, key_form(await token(visitor, prop["id"]), "One too many", ["ari:read"]))
    assert over.status == 409 and f"at most {MAX_LIVE_KEYS} live keys" in over.text


async def test_an_allowlist_set_in_the_console_refuses_and_lists_other_addresses(api: Harness) -> None:
    prop = await api.create_property()
    visitor = await owner_of(api, prop)
    key_id, secret, _ = await create(visitor, prop["id"], "Front desk", ["ari:read"])
    assert "no request was refused" in (await visitor.get(keys_of(prop["id"]))).text

    saved = await edit(visitor, prop["id"], key_id, "Front desk", ["ari:read"], " 203.0.113.0/24 \n\n2001:db8::1\n")
    assert saved.status == 303
    assert (await api.call("GET", f"{API}/property", key=secret, address="203.0.113.9")).status == 200
    refused = await api.call("GET", f"{API}/property", key=secret, address="198.51.100.77")
    assert (refused.status, refused.code) == (403, "IP_NOT_ALLOWED")

    listed = await visitor.get(keys_of(prop["id"]))
    assert "<code>203.0.113.0/24</code>" in listed.text and "<code>2001:db8::1</code>" in listed.text
    refusals = listed.text.split('id="refusals"', 1)[1]
    assert "198.51.100.77" in refusals and secret[:13] in refusals and "203.0.113.9" not in refusals
    assert api.ctx.clock.now().strftime("%Y-%m-%d %H:%M") in refusals


async def test_a_key_rotated_in_the_console(api: Harness) -> None:
    prop = await api.create_property()
    visitor = await owner_of(api, prop)
    key_id, old, _ = await create(visitor, prop["id"], "PMS", ["ari:read", "bookings:read"], "198.51.100.0/24")
    path = f"{keys_of(prop['id'])}/{key_id}/rotate"
    asked = await visitor.get(path)
    assert asked.status == 200 and "stops working at once" in asked.text and 'class="danger"' in asked.text

    rotated = await send(visitor, path, [("csrf", asked.csrf())])
    assert rotated.status == 201, rotated.text[:2000]
    found = SECRET.search(rotated.text)
    assert found and found.group(1) != old and old[:13] in rotated.text
    new = found.group(1)
    answer = await api.call("GET", f"{API}/property", key=old)
    assert (answer.status, answer.code) == (401, "API_KEY_REVOKED")
    answer = await api.call("GET", f"{API}/property", key=new)
    assert answer.status == 200 and answer.data["scopes"] == ["ari:read", "bookings:read"]

    listed = await visitor.get(keys_of(prop["id"]))
    assert new not in listed.text and old not in listed.text and listed.text.count("revoked 2026") == 1
    again = await send(visitor, path, [("csrf", asked.csrf())])  # the old key, already replaced
    assert again.status == 409 and "revoked" in again.text and SECRET.search(again.text) is None


async def test_a_key_revoked_in_the_console(api: Harness) -> None:
    prop = await api.create_property()
    visitor = await owner_of(api, prop)
    key_id, secret, _ = await create(visitor, prop["id"], "Old PMS", ["ari:read"])
    path = f"{keys_of(prop['id'])}/{key_id}/revoke"
    asked = await visitor.get(path)
    assert asked.status == 200 and "cannot be undone" in asked.text and 'class="danger"' in asked.text

    done = await send(visitor, path, [("csrf", asked.csrf())])
    assert done.status == 303 and done.location == f"{keys_of(prop['id'])}?done=revoked"
    answer = await api.call("GET", f"{API}/property", key=secret)
    assert (answer.status, answer.code) == (401, "API_KEY_REVOKED")
    listed = await visitor.get(done.location)
    assert "Key revoked" in listed.text and "revoked 2026" in listed.text

    one = await visitor.get(f"{keys_of(prop['id'])}/{key_id}")
    assert one.status == 200 and "<form method=\"post\" action=\"/console/properties" not in one.text
    changed = await send(visitor, f"{keys_of(prop['id'])}/{key_id}", key_form(one.csrf(), "Back", ["ari:read"]))
    assert changed.status == 409 and "revoked" in changed.text
    assert (await visitor.get(path)).status == 409
    assert (await api.call("GET", f"{API}/property", key=secret)).code == "API_KEY_REVOKED"


async def test_an_owner_reaches_no_key_of_another_property(api: Harness) -> None:
    mine, theirs = await api.create_property(), await api.create_property(name="Casa Verde")
    their_key = await api.create_key(theirs["id"], ["ari:read"])
    visitor = await owner_of(api, mine)
    csrf = await token(visitor, mine["id"])
    fields = key_form(csrf, "Taken", ["ari:read", "ari:write", "bookings:read"], "192.0.2.1")

    routes = []
    for base, key_id in ((keys_of(theirs["id"]), their_key["id"]), (keys_of(mine["id"]), their_key["id"]),
                         (keys_of(mine["id"]), 987654321), (keys_of(theirs["id"]), 987654321)):
        key = f"{base}/{key_id}"
        routes += [("GET", key), ("POST", key), ("GET", f"{key}/rotate"), ("POST", f"{key}/rotate"),
                   ("GET", f"{key}/revoke"), ("POST", f"{key}/revoke")]
    routes += [("GET", keys_of(theirs["id"])), ("POST", keys_of(theirs["id"]))]
    bodies = set()
    for method, path in routes:
        answer = await (visitor.get(path) if method == "GET" else send(visitor, path, fields))
        assert answer.status == 404, (method, path, answer.status, answer.text[:1000])
        assert "Casa Verde" not in answer.text and "There is no such page" in answer.text
        bodies.add(answer.text)
    assert len(bodies) == 1  # another property's key reads exactly as one that does not exist

    # Nothing of theirs changed: the same one key, live, with its scopes, still working.
    theirs_now = (await api.admin("GET", f"/properties/{theirs['id']}/keys")).data
    assert [(k["id"], k["label"], k["scopes"], k["allowlist"], k["revokedAt"]) for k in theirs_now] == \
        [(their_key["id"], "test", ["ari:read"], [], None)]
    assert (await api.call("GET", f"{API}/sync", key=their_key["key"])).status == 200
    assert (await api.admin("GET", f"/properties/{mine['id']}/keys")).data == []


async def test_the_key_forms_need_their_token(api: Harness) -> None:
    prop = await api.create_property()
    visitor = await owner_of(api, prop)
    key_id, secret, _ = await create(visitor, prop["id"], "PMS", ["ari:read"])
    key = f"{keys_of(prop['id'])}/{key_id}"
    for path, fields in ((keys_of(prop["id"]), key_form(None, "New", ["ari:read"])),
                         (key, key_form(None, "Changed", ["bookings:read"], "192.0.2.1")),
                         (f"{key}/rotate", []), (f"{key}/revoke", [])):
        for sent in (fields, [("csrf", "x" * 43), *fields]):
            refused = await send(visitor, path, sent)
            assert refused.status == 403 and "no longer valid" in refused.text, (path, refused.status)
    keys = (await api.admin("GET", f"/properties/{prop['id']}/keys")).data
    assert [(k["label"], k["scopes"], k["revokedAt"]) for k in keys] == [("PMS", ["ari:read"], None)]
    assert (await api.call("GET", f"{API}/sync", key=secret)).status == 200

    stranger = Visitor(api)
    assert (await stranger.get(keys_of(prop["id"]))).location == f"/console/login?next={keys_of(prop['id'])}"


async def test_every_change_clears_the_key_cache_at_once(api: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    """As the admin routes do: not left to the database's notification, which comes later."""
    prop = await api.create_property()
    visitor = await owner_of(api, prop)
    key_id, secret, _ = await create(visitor, prop["id"], "PMS", ["ari:read"])
    cleared: list[str] = []  # by our key actions; the LISTEN of the database's NOTIFY clears it too, later
    clear = api.ctx.keys.invalidate

    def clearing() -> None:
        if sys._getframe(1).f_globals["__name__"] == "connectapi.http.shared.key_actions":
            cleared.append(sys._getframe(2).f_code.co_name)
        clear()

    monkeypatch.setattr(api.ctx.keys, "invalidate", clearing)
    key = f"{keys_of(prop['id'])}/{key_id}"

    assert (await api.call("GET", f"{API}/property", key=secret)).status == 200
    assert api.ctx.keys.cached(keyfmt.digest(secret)) is not None
    assert (await edit(visitor, prop["id"], key_id, "PMS", ["bookings:read"])).status == 303
    assert cleared == ["save"]
    rotated = await send(visitor, f"{key}/rotate", [("csrf", await token(visitor, prop["id"]))])
    found = SECRET.search(rotated.text) and KEY_LINK.search(rotated.text)
    assert rotated.status == 201 and found and cleared == ["save", "rotate"]
    new_id = int(found.group(1))
    done = await send(visitor, f"{keys_of(prop['id'])}/{new_id}/revoke", [("csrf", await token(visitor, prop["id"]))])
    assert done.status == 303 and cleared == ["save", "rotate", "revoke"]
