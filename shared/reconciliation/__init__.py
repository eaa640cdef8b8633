"""Pure audit of a pipeline stage against the next: per org and event-time window, counts and checksums."""
