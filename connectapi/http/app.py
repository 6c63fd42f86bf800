"""The app factory: every audience's blueprints, their gates, the envelope for every answer,
one place for 500s."""

from __future__ import annotations

import logging
import uuid
from typing import TYPE_CHECKING

import trio
from quart import Response, g, request
from quart.wrappers import Request
from quart_trio import QuartTrio
from werkzeug.exceptions import HTTPException

if TYPE_CHECKING:
    from quart.ctx import _AppCtxGlobals

from ..domain.errors import ApiError
from ..domain.paths import ADMIN_PREFIX, CONNECT_PREFIX
from ..budgets.headers import policy_header, ratelimit_header
from ..engine import ActorCrashed, ActorUnavailable, AskTimeout
from ..storage.database import RecordRefused, StorageUnavailable
from . import console, envelope, observe
from .admin import actors as admin_actors
from .admin import bookings as admin_bookings
from .admin import channel as admin_channel
from .admin import metrics as admin_metrics
from .admin import owners as admin_owners
from .admin import properties as admin_properties
from .admin import webhooks as admin_webhooks
from .admin.token import check_admin_token
from .api import ari as ari_routes
from .api import batches as batch_routes
from .api import bookings as booking_routes
from .api import property as property_routes
from .api import sync as sync_routes
from .api import testmode_helpers as test_helper_routes
from .api.gates import MAX_BODY_BYTES, run_gates
from .console.session import error_page, is_console_path
from .context import FrontContext, context, current_globals, current_request
from .converters import IdConverter
from .public import documents, health, notify

log = logging.getLogger("connectapi.http")

_HTTP_CODES = {404: "NOT_FOUND", 405: "METHOD_NOT_ALLOWED", 408: "REQUEST_TIMEOUT", 413: "PAYLOAD_TOO_LARGE"}
# Retry-After on our own 503s: long enough for a restart backoff, short enough to matter.
UNAVAILABLE_RETRY_SECONDS = 5
BODY_TIMEOUT_SECONDS = 10
# What is left of a body an answer did not need is read if it is already there, not awaited.
DRAIN_LIMIT_SECONDS = 0.5


def create_app(ctx: FrontContext) -> QuartTrio:
    app = QuartTrio("connectapi")
    app.config["CONNECTAPI"] = ctx
    # Quart refuses a larger body as it arrives (chunked included); the gates refuse a
    # declared Content-Length before anything is read.
    app.config["MAX_CONTENT_LENGTH"] = MAX_BODY_BYTES
    # A body must arrive whole within this (Quart's default is 60 s): a slow sender holds a
    # connection and a request's memory meanwhile.
    app.config["BODY_TIMEOUT"] = BODY_TIMEOUT_SECONDS
    app.config["PROVIDE_AUTOMATIC_OPTIONS"] = False
    app.json.sort_keys = False  # type: ignore[attr-defined]
    # Before any blueprint: each rule takes its converters when it is added.
    app.url_map.converters["int"] = IdConverter
    # No path is rewritten by a redirect of Werkzeug's own (a 308 to `//` merged, or to a
    # trailing slash added): it carries none of the console's headers and builds its
    # Location from the Host header. A path no rule matches as sent is a 404.
    app.url_map.merge_slashes = False
    app.url_map.strict_slashes = False

    app.register_blueprint(health.blueprint)
    app.register_blueprint(admin_properties.blueprint)
    app.register_blueprint(admin_channel.blueprint)
    app.register_blueprint(admin_bookings.blueprint)
    app.register_blueprint(admin_webhooks.blueprint)
    app.register_blueprint(admin_actors.blueprint)
    app.register_blueprint(admin_owners.blueprint)
    app.register_blueprint(console.blueprint)
    app.register_blueprint(notify.blueprint)
    app.register_blueprint(documents.blueprint)
    app.register_blueprint(admin_metrics.blueprint)
    for routes in (property_routes, ari_routes, batch_routes, sync_routes, booking_routes, test_helper_routes):
        app.register_blueprint(routes.blueprint, url_prefix=CONNECT_PREFIX)

    @app.before_request
    async def gate() -> None:
        store = current_globals()  # one context lookup, not one a use
        store.request_id = uuid.uuid4().hex
        observe.started(store)
        req = current_request()
        path = req.path
        if path.startswith(CONNECT_PREFIX + "/") or path == CONNECT_PREFIX:
            await run_gates(context(), req)
        elif path.startswith(ADMIN_PREFIX + "/"):
            await check_admin_token()

    @app.after_request
    async def headers(response: Response) -> Response:
        store = current_globals()
        req = current_request()
        close = await _drain_body(store, req)
        request_id = store.get("request_id")
        if request_id:
            response.headers["X-Request-Id"] = request_id
        policies = store.get("ratelimit")
        if policies:
            response.headers["RateLimit-Policy"] = policy_header(policies)
            response.headers["RateLimit"] = ratelimit_header(policies)
        observe.answered(store, req, response)
        if close or context().stopping.is_set():
            # Stopping: the client goes elsewhere for its next request. A body not read in
            # time: the connection is not worth keeping, and no refusal waits on a slow body.
            response.headers["Connection"] = "close"
        return response

    @app.errorhandler(ApiError)
    async def api_error(err: ApiError) -> Response:
        if is_console_path(request.path):
            return await error_page(err.status, err.message)
        return _refused(err)

    @app.errorhandler(HTTPException)
    async def http_error(err: HTTPException) -> Response:
        status = err.code or 500
        if status == 416 and is_console_path(request.path):
            # Quart's answer to a Range of a console file it will not serve (past the end, not
            # bytes, several ranges, unreadable): the client's doing, said on a page.
            return await error_page(416, "this part of the file cannot be sent; ask for the whole file")
        code = _HTTP_CODES.get(status)
        if code is None:
            log.warning("unmapped HTTP error %s on %s %s", status, observe.method_label(request.method),
                        observe.clipped(request.path))
            return _internal()
        messages = {
            "NOT_FOUND": "no such route",
            "METHOD_NOT_ALLOWED": (f"{request.method} is not allowed here" if request.method in observe.KNOWN_METHODS
                                   else "this method is not allowed here"),
            "PAYLOAD_TOO_LARGE": f"the body exceeds {MAX_BODY_BYTES} bytes",
            "REQUEST_TIMEOUT": "the body did not arrive in time",
        }
        if is_console_path(request.path):
            return await error_page(status, messages[code])
        response = _refused(ApiError(code, messages[code]))
        if status == 405 and getattr(err, "valid_methods", None):
            response.headers["Allow"] = ", ".join(sorted(err.valid_methods))  # type: ignore[attr-defined]
        return response

    @app.errorhandler(ActorUnavailable)
    @app.errorhandler(AskTimeout)
    @app.errorhandler(StorageUnavailable)
    async def unavailable(err: Exception) -> Response:
        log.error("service unavailable for request %s: %s", g.get("request_id"), err)
        return await _unavailable_here()

    @app.errorhandler(RecordRefused)
    async def record_refused(err: RecordRefused) -> Response:
        if err.transient:
            # A deadlock or serialization failure: rolled back whole, and worth a retry.
            log.warning("record refused request %s for now: %s", g.get("request_id"), err)
            return await _unavailable_here()
        log.error("record refused request %s: %s", g.get("request_id"), err, exc_info=err)
        return await _internal_here()

    @app.errorhandler(ActorCrashed)
    async def crashed(err: ActorCrashed) -> Response:
        # The actor's failure, logged with its cause; the supervisor restarts it.
        log.error("an actor crashed on request %s: %s", g.get("request_id"), err, exc_info=err.__cause__ or err)
        return await _internal_here()

    @app.errorhandler(Exception)
    async def unexpected(err: Exception) -> Response:
        log.exception("unhandled error in request %s", g.get("request_id"), exc_info=err)
        return await _internal_here()

    return app


async def _drain_body(store: _AppCtxGlobals, req: Request) -> bool:
    """Read what is left of a body the answer did not need (a refusal, a 405, a GET with a
    body): answering on a keep-alive connection while the body still streams in left a
    request in about three hundred hanging (found by schemathesis, measured with requests
    in a loop). A body already there is read at once; one still coming is not waited for
    (a refusal waited up to 60 s on a slow sender): True, and the connection is closed.
    Quart's size limit still bounds what is read."""
    if store.get("body_read") or not (req.content_length or req.headers.get("Transfer-Encoding")):
        return False
    with trio.move_on_after(DRAIN_LIMIT_SECONDS) as waiting:
        try:
            await req.get_data(cache=False)
        except Exception:  # noqa: BLE001 - a broken or oversized body: the answer stands
            return True
    return waiting.cancelled_caught


def _unavailable() -> Response:
    return _refused(ApiError(
        "SERVICE_UNAVAILABLE", "the service cannot answer right now; retry later",
        retry_after_seconds=UNAVAILABLE_RETRY_SECONDS,
    ))


async def _unavailable_here() -> Response:
    """The 503 of the path asked: a console page is HTML, told when to come back as the
    API's clients are (a browser ignores it; a monitor or a proxy does not)."""
    if not is_console_path(request.path):
        return _unavailable()
    return await error_page(503, "The service cannot answer right now; try again in a few seconds.",
                            UNAVAILABLE_RETRY_SECONDS)


async def _internal_here() -> Response:
    if is_console_path(request.path):
        return await error_page(500, f"Something went wrong on our side (request {g.get('request_id')}).")
    return _internal()


def _internal() -> Response:
    request_id = g.get("request_id") or uuid.uuid4().hex
    return _refused(ApiError("INTERNAL", "internal error", {"requestId": request_id}))


def _refused(err: ApiError) -> Response:
    return envelope.refused(err)
