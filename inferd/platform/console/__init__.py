"""The console: a page of the control process at ``/console/`` showing deployments, versions,
services with their state and traffic (an hour of it as charts, `history`) and their logs, endpoints
with their weights, and runs; it starts and stops services, changes weights and creates deployments
through the control API."""

from inferd.platform.console.routes import console_login, console_routes

__all__ = ["console_login", "console_routes"]
