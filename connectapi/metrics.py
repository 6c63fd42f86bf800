"""The service's Prometheus metrics, in one registry of its own (prometheus-client).

Counters are kept where things happen; the gauges that describe the record (dirty cells,
the webhook backlog) are read from it when /metrics is scraped.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, GCCollector, Gauge, Histogram, ProcessCollector

REGISTRY = CollectorRegistry(auto_describe=True)
# The process's memory and CPU, and the garbage collector's work by generation, read when
# /metrics is scraped: what to watch with the collector set for serving
# (docs/decisions/0121-the-collector-set-for-serving.md).
ProcessCollector(registry=REGISTRY)
GCCollector(registry=REGISTRY)

REQUESTS = Counter("connectapi_requests", "HTTP requests answered, by route and status",
                   ["method", "route", "status"], registry=REGISTRY)
LATENCY = Histogram("connectapi_request_seconds", "Time to answer a request, by route", ["method", "route"],
                    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0), registry=REGISTRY)
RATE_LIMITED = Counter("connectapi_rate_limited", "429 answers, by the budget that ran out", ["scope"],
                       registry=REGISTRY)
SLICE_ADMISSIONS = Counter("connectapi_budget_slice_admissions",
                           "Requests admitted from budget slices, with no budget statement of their own "
                           "(docs/decisions/0124-budget-slices.md)", registry=REGISTRY)
SLICE_ASKS = Counter("connectapi_budget_slice_asks", "Budget slices asked of the record, by outcome",
                     ["outcome"], registry=REGISTRY)
CM_CALLS = Counter("connectapi_channel_manager_calls", "Calls to the channel manager, by kind and outcome",
                   ["kind", "outcome"], registry=REGISTRY)
CM_PAST_DROPPED = Counter("connectapi_channel_manager_past_cells_dropped",
                          "Dirty cells of nights that became past before they were sent (never sent)",
                          registry=REGISTRY)
CM_REFUSED_CELLS = Counter("connectapi_channel_manager_refused_cells",
                           "Cells of values the channel manager refused in a 200 (meta.warnings)", registry=REGISTRY)
DIRTY_CELLS = Gauge("connectapi_dirty_cells", "Cells written but not yet accepted by the channel manager",
                    ["resource"], registry=REGISTRY)
WEBHOOK_BACKLOG = Gauge("connectapi_webhook_backlog", "Webhook deliveries not yet delivered (paused included)",
                        registry=REGISTRY)
WEBHOOK_FAILURES = Counter("connectapi_webhook_failures", "Failed webhook delivery attempts", registry=REGISTRY)
ACTOR_RESTARTS = Counter("connectapi_actor_restarts", "Actor incarnations restarted after a crash", ["actor"],
                         registry=REGISTRY)
ACTOR_DOWN = Gauge("connectapi_actor_down", "Actors whose crash budget is spent: down until revived (1 each)",
                   ["actor"], registry=REGISTRY)
LIVE_ACTORS = Gauge("connectapi_live_actors", "Per-property actors alive (idle ones stop and are reclaimed)",
                    ["kind"], registry=REGISTRY)
