"""rekey's deployed side: the live services (ACL, projection, sink, reconciler), their runtime and the CLI."""
