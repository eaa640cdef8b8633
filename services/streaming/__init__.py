"""What every faust service of rekey shares: the app factory, health/readiness pages and Prometheus metrics."""
