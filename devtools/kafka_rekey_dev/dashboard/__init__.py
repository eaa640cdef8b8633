"""`rekey dashboard render`: the chart's Grafana dashboard drawn with matplotlib from a real run's metrics, scraped
by a real Prometheus, for docs/HELM.md where no Grafana runs."""
