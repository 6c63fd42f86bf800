"""OpenTelemetry traces, off unless an OTLP endpoint is set (docs/decisions/0141-traces-over-otlp.md).

`setup.exporting` sets up the process's exporter from the SDK's environment variables;
`spans` is what the house's code opens spans with and hands them between tasks by;
`asgi` gives each request its server span; `http_client` the channel manager's calls
their client spans; `log_fields` puts the trace's ids on log lines.
"""
