"""Record routing: the one function the live service and the Spark backfill call to place a record."""

from kafka_rekey.shared.routing.route import Route, Tier, route, route_in

__all__ = ["Route", "Tier", "route", "route_in"]
