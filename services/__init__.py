"""rekey's runtime side: faust services, sinks, the CLI and the embedded infrastructure used by demo and tests."""
