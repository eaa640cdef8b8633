"""PySpark jobs that republish history into a new versioned topic and verify it."""
