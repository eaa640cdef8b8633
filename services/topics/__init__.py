"""Provisioning the catalog's topics on a cluster: create, detect drift, guard partition-count changes."""
