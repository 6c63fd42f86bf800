"""A browser's part for console tests over the app's test client: its own cookie jar, form
posts with the page's CSRF token, redirects not followed (their targets are asserted)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from quart.typing import TestClientProtocol

from .harness import Harness

CSRF = re.compile(r'name="csrf" value="([^"]+)"')
# The owner most console tests log in as.
OWNER = "ana@hotel.example"
PASSWORD = "correct horse battery"


@dataclass
class Page:
    status: int
    text: str
    headers: Any

    @property
    def location(self) -> str | None:
        found: str | None = self.headers.get("Location")
        return found

    def csrf(self) -> str:
        match = CSRF.search(self.text)
        assert match, f"no form token on the page:\n{self.text[:2000]}"
        return match.group(1)


class Visitor:
    def __init__(self, api: Harness, address: str = "198.51.100.20") -> None:
        self.api = api
        self.client: TestClientProtocol = api.client.app.test_client()
        self.address = address

    async def get(self, path: str) -> Page:
        return await self._open("GET", path)

    async def post(self, path: str, form: dict[str, str], headers: dict[str, str] | None = None) -> Page:
        return await self._open("POST", path, form=form, headers=headers or {})

    async def submit(self, page_path: str, action: str, fields: dict[str, str]) -> Page:
        """Open a page, then post one of its forms with the page's token."""
        shown = await self.get(page_path)
        assert shown.status == 200, (shown.status, shown.text[:500])
        return await self.post(action, {"csrf": shown.csrf(), **fields})

    async def _open(self, method: str, path: str, **kwargs: Any) -> Page:
        response = await self.client.open(path, method=method, scope_base={"client": (self.address, 40000)},
                                          **kwargs)
        return Page(response.status_code, await response.get_data(as_text=True), response.headers)

    def cookie(self, name: str) -> str | None:
        for cookie in self.client.cookie_jar or ():
            if cookie.name == name:
                return str(cookie.value)
        return None


async def owner_with_password(api: Harness, email: str, password: str, property_ids: list[int]) -> int:
    """An owner made through the admin API, its password chosen through its setup link."""
    made = await api.admin("POST", "/owners", {"email": email, "name": email.split("@")[0].title(),
                                               "propertyIds": property_ids})
    assert made.status == 201, made.body
    path = made.data["setupUrl"].split("://", 1)[1].split("/", 1)[1]
    visitor = Visitor(api)
    done = await visitor.submit("/" + path, "/" + path, {"password": password, "confirm": password})
    assert done.status == 200 and "Your password is set" in done.text, done.text[:1000]
    owner_id: int = made.data["ownerId"]
    return owner_id


async def logged_in(api: Harness, email: str, password: str, address: str = "198.51.100.20") -> Visitor:
    visitor = Visitor(api, address)
    answer = await visitor.submit("/console/login", "/console/login", {"email": email, "password": password})
    assert answer.status == 302 and answer.location is not None and answer.location.endswith("/console/"), \
        (answer.status, answer.text[:500])
    return visitor


async def owner_of(api: Harness, *props: dict[str, Any], email: str = OWNER) -> Visitor:
    """An owner of these properties (made through the admin API, its password set), logged in."""
    await owner_with_password(api, email, PASSWORD, [p["id"] for p in props])
    return await logged_in(api, email, PASSWORD)
