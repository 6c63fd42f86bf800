"""What anyone may reach without an API key, a session or the operator token.

- health.py: GET /healthz and /readyz, the probes of a load balancer or an orchestrator.
- documents.py: the webhook contract, and the Connect API's OpenAPI document (openapi.py,
  built from the contract's models and one table of its routes) and Postman collection
  (postman.py, from the same table).
- notify.py: the channel manager's notification that booking revisions wait, proved by a
  shared secret.

All but the probes are held to the caller address's budgets by api/gates.py's address
gates, as the Connect API's requests are.
"""
