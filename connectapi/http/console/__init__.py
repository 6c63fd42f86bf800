"""The owners' console (issue 19): server-rendered pages under /console/ for the owner's
own properties. Every form works without JavaScript; the one script (console.js, copy
buttons) comes from 'self' under a Content-Security-Policy without inline script.

session.py holds the session, the form token, the pages' rendering and the console's
refusals; form.py reads a posted form within its caps; auth.py the login and set-up;
pages.py the property list, a property's overview and each property page's frame;
keys.py, webhooks.py, grid.py, bookings.py, notifications.py and settings.py one screen
each. What the operator's admin API does too (keys, webhook endpoints, settings,
check-in, the held grid) is shared/'s."""

from __future__ import annotations

from quart import Blueprint, Response

from . import auth, bookings, grid, keys, notifications, pages, settings, webhooks
from .session import (PREFIX, ConsoleRefusal, admit, after_page, check_form_token, load_session, refusal_page,
                      utc_minute, utc_second)

blueprint = Blueprint("console", __name__, url_prefix=PREFIX, template_folder="templates",
                      static_folder="static", static_url_path="/static")
blueprint.add_app_template_filter(utc_minute, "utc")
blueprint.add_app_template_filter(utc_second, "utc_second")


@blueprint.before_request
async def before_page() -> None:
    await admit()
    await load_session()
    await check_form_token()


@blueprint.after_request
async def after(response: Response) -> Response:
    return after_page(response)


@blueprint.errorhandler(ConsoleRefusal)
async def refused(refusal: ConsoleRefusal) -> Response:
    return await refusal_page(refusal)


blueprint.add_url_rule("/login", view_func=auth.login_form, methods=["GET"])
blueprint.add_url_rule("/login", view_func=auth.login, methods=["POST"], endpoint="login_post")
blueprint.add_url_rule("/logout", view_func=auth.logout, methods=["POST"])
blueprint.add_url_rule("/setup/<token>", view_func=auth.setup_form, methods=["GET"])
blueprint.add_url_rule("/setup/<token>", view_func=auth.setup, methods=["POST"], endpoint="setup_post")
pages.register(blueprint)
for screen in (keys, webhooks, grid, bookings, notifications, settings):
    screen.register(blueprint)
