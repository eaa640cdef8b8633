"""Outputs of `rekey plan`: the JSON report and the partition-rate chart."""
