"""The HTTP front, by audience. Status codes and bodies are made only here.

- api/: the Connect API for integrators (the contract): its routes, its gates, and what
  only they use.
- admin/: the operator's admin API, behind the operator token, and /metrics.
- console/: the owners' console, server-rendered pages behind an owner's session.
- public/: what anyone may reach without a key: the health probes, the OpenAPI document,
  the Postman collection, the webhook contract, the channel manager's notification.
- shared/: what the operator (admin/) and the owner (console/) both do to a property.
- serving/: hypercorn: binding, the connection guard, bounded sends, the stop.

Here, what every audience goes through: the app factory (app.py), the service's handles
and the request's caller address (context.py), the JSON envelope (envelope.py), the body
(body.py), path converters (converters.py), each request's log line and metrics
(observe.py). The rate budgets every audience is held to are the budgets package's
(connectapi/budgets: the console, the admin API and the public routes are charged to the
caller address's budgets as the Connect API is).

An audience imports what is here and, where said in its own docstring, shared/ or
api/gates.py; never another audience's routes.
"""
