"""The live anti-corruption layer: translate source records, re-key them, stamp dense per-key sequences."""
