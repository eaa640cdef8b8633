"""The `rekey` command line: one module per concern, each registering its commands on the root app."""
