"""The API keys screen of one property: the keys, a new key (its secret shown once, on the
answer to the form), a key's label, scopes and allowlist, rotating and revoking it, and
the requests its allowlist refused.

The same actions as the admin API (http/key_actions), with the same validation (the form
is read into KeyIn / KeyPatch), held to the owned property: a key of another property is
not found, exactly as a missing one."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from quart import Blueprint, Response, redirect, request
from typing_extensions import TypedDict
from werkzeug.datastructures import MultiDict

from ...domain.admin_models import KeyIn, KeyPatch
from ...domain.errors import ApiError
from ...domain.scopes import ALL_SCOPES
from ...domain.validation import parse_payload
from ...storage.api_keys import MAX_LIVE_KEYS
from ...storage.records import ApiKey, Property
from ..shared import key_actions
from . import form as posted_form
from .pages import property_page
from .session import PREFIX, ConsoleRefusal, console_mode, login_required, not_found, owned_property

TAB = "/keys"
# What a redirect after a change may say (by code: nothing the client writes is shown).
DONE = {"saved": "Key saved.", "revoked": "Key revoked: the API refuses it from now on."}
SCOPE_HINTS = {
    "ari:read": "read availability, rates and restrictions",
    "ari:write": "write availability, rates and restrictions",
    "bookings:read": "read bookings",
    "bookings:write": "create, change and cancel bookings",
    "bookings:payments": "payment details of bookings (needs bookings:write)",
}
FIELD_NAMES = {"label": "Label", "scopes": "Scopes", "allowlist": "Allowlist"}
MOST_ALLOWLIST_TEXT = 20_000  # twenty IPv6 ranges with room to spare; more is not read


class KeyBody(TypedDict):
    """A key's label, scopes and allowlist as the admin API takes them (KeyIn, KeyPatch)."""

    label: str
    scopes: list[str]
    allowlist: list[str]


@dataclass
class KeyForm:
    """What the key form holds: as the owner typed it, to show it again."""

    label: str = ""
    scopes: list[str] = field(default_factory=list)
    allowlist: str = ""

    @classmethod
    def of_key(cls, key: ApiKey) -> KeyForm:
        return cls(key.label, list(key.scopes), "\n".join(key.allowlist))

    @classmethod
    def of_post(cls, form: MultiDict[str, str]) -> KeyForm:
        return cls(form.get("label", "").strip(), form.getlist("scopes"),
                   form.get("allowlist", "")[:MOST_ALLOWLIST_TEXT + 1])

    def payload(self) -> KeyBody:
        """The body the admin API would get: one address or range a line, blank lines ignored."""
        if len(self.allowlist) > MOST_ALLOWLIST_TEXT:
            raise ApiError("VALIDATION", "too long", [{"path": "allowlist", "message": "too long"}])
        entries = [line.strip() for line in self.allowlist.splitlines() if line.strip()]
        return {"label": self.label, "scopes": self.scopes, "allowlist": entries}


def problem_of(err: ApiError, what: str) -> str:
    """A refusal of the shared key actions as a sentence for the page."""
    if err.code == "KEY_LIMIT_REACHED":
        return f"{what}: a property has at most {MAX_LIVE_KEYS} live keys. Revoke one first."
    if err.code != "VALIDATION" or not isinstance(err.details, list):
        return f"{what}: {err.message}."
    parts = []
    for issue in err.details:
        name = re.split(r"[.\[]", str(issue.get("path", "")))[0]
        message = str(issue.get("message", "")).removeprefix("Value error, ")
        if name == "label":
            message = "1 to 80 characters on one line"
        elif name == "scopes" and message.startswith("Input should be"):
            message = "choose from the list"
        parts.append(f"{FIELD_NAMES.get(name, 'Form')}: {message}.")
    return f"{what}. " + " ".join(parts)


def keys_path(prop: Property, key_id: int | None = None) -> str:
    path = f"{PREFIX}/properties/{prop.id}/keys"
    return path if key_id is None else f"{path}/{key_id}"


async def owned_key(prop: Property, key_id: int) -> ApiKey:
    """A key of the owned property in the mode shown, or 404 as for any page that is not the
    owner's (a live key is not acted on under the test banner, nor a test key without it)."""
    try:
        key = await key_actions.get_key(key_id, prop.id)
    except ApiError:
        raise not_found() from None
    if key.mode != console_mode():
        raise not_found()
    return key


def live(key: ApiKey) -> ApiKey:
    if key.revoked_at is not None:
        raise ConsoleRefusal(409, "Key revoked", "This key is revoked: it can no longer be changed, rotated "
                                                 "or used. Create a new key instead.")
    return key


def done(path: str, what: str) -> Response:
    also = "&mode=test" if console_mode() == "test" else ""  # back to the mode the form was in
    answer: Response = redirect(f"{path}?done={what}{also}", 303)  # type: ignore[assignment]
    return answer


async def keys_page(prop: Property, status: int = 200, form: KeyForm | None = None, error: str | None = None,
                    notice: str | None = None) -> Response:
    every = await key_actions.list_keys(prop.id)
    by_id = {k.id: k for k in every}
    keys = [k for k in every if k.mode == console_mode()]  # the keys of the mode shown
    refusals = [{**r, "key": by_id.get(r["key_id"])} for r in await key_actions.allowlist_refusals(prop.id)]
    return await property_page("keys.html", prop, TAB, status, keys=keys, refusals=refusals,
                               live_count=sum(1 for k in keys if k.revoked_at is None), most=MAX_LIVE_KEYS,
                               form=form or KeyForm(scopes=["ari:read"]), error=error, notice=notice,
                               all_scopes=ALL_SCOPES, hints=SCOPE_HINTS)


async def key_page(prop: Property, key: ApiKey, status: int = 200, form: KeyForm | None = None,
                   error: str | None = None, notice: str | None = None) -> Response:
    return await property_page("keys_edit.html", prop, TAB, status, key=key, form=form or KeyForm.of_key(key),
                               error=error, notice=notice, all_scopes=ALL_SCOPES, hints=SCOPE_HINTS)


@login_required
async def list_page(property_id: int) -> Response:
    prop = await owned_property(property_id)
    return await keys_page(prop, notice=DONE.get(request.args.get("done", "")))


@login_required
async def create(property_id: int) -> Response:
    prop = await owned_property(property_id)
    form = KeyForm.of_post(posted_form.posted())
    try:
        body = parse_payload(KeyIn, {**form.payload(), "mode": console_mode()})
        key, secret = await key_actions.create_key(prop.id, body)
    except ApiError as err:
        return await keys_page(prop, 409 if err.code == "KEY_LIMIT_REACHED" else 400, form=form,
                               error=problem_of(err, "The key was not created"))
    return await property_page("keys_secret.html", prop, TAB, 201, key=key, secret=secret, replaced=None)


@login_required
async def edit_page(property_id: int, key_id: int) -> Response:
    prop = await owned_property(property_id)
    key = await owned_key(prop, key_id)
    return await key_page(prop, key, notice=DONE.get(request.args.get("done", "")))


@login_required
async def save(property_id: int, key_id: int) -> Response:
    prop = await owned_property(property_id)
    key = live(await owned_key(prop, key_id))
    form = KeyForm.of_post(posted_form.posted())
    try:
        patch = parse_payload(KeyPatch, form.payload())
    except ApiError as err:
        return await key_page(prop, key, 400, form=form, error=problem_of(err, "The key was not saved"))
    try:
        await key_actions.patch_key(key.id, patch, prop.id)
    except ApiError:
        raise not_found() from None  # revoked or gone since it was read
    return done(keys_path(prop, key.id), "saved")


@login_required
async def rotate_page(property_id: int, key_id: int) -> Response:
    prop = await owned_property(property_id)
    key = live(await owned_key(prop, key_id))
    return await property_page("keys_confirm.html", prop, TAB, key=key, action="rotate")


@login_required
async def rotate(property_id: int, key_id: int) -> Response:
    prop = await owned_property(property_id)
    old = live(await owned_key(prop, key_id))
    try:
        key, secret = await key_actions.rotate_key(old.id, prop.id)
    except ApiError:
        raise not_found() from None
    return await property_page("keys_secret.html", prop, TAB, 201, key=key, secret=secret, replaced=old)


@login_required
async def revoke_page(property_id: int, key_id: int) -> Response:
    prop = await owned_property(property_id)
    key = live(await owned_key(prop, key_id))
    return await property_page("keys_confirm.html", prop, TAB, key=key, action="revoke")


@login_required
async def revoke(property_id: int, key_id: int) -> Response:
    prop = await owned_property(property_id)
    key = await owned_key(prop, key_id)
    try:
        await key_actions.revoke_key(key.id, prop.id)  # a revoked key stays as it was
    except ApiError:
        raise not_found() from None
    return done(keys_path(prop), "revoked")


def register(blueprint: Blueprint) -> None:
    key = "/properties/<int:property_id>/keys/<int:key_id>"
    for path, view, method, endpoint in (
        ("/properties/<int:property_id>/keys", list_page, "GET", "keys"),
        ("/properties/<int:property_id>/keys", create, "POST", "keys_create"),
        (key, edit_page, "GET", "keys_key"),
        (key, save, "POST", "keys_save"),
        (key + "/rotate", rotate_page, "GET", "keys_rotate_page"),
        (key + "/rotate", rotate, "POST", "keys_rotate"),
        (key + "/revoke", revoke_page, "GET", "keys_revoke_page"),
        (key + "/revoke", revoke, "POST", "keys_revoke"),
    ):
        blueprint.add_url_rule(path, view_func=view, methods=[method], endpoint=endpoint)
