"""Derived projections of the domain topics (org activity keyed by org_id)."""
