"""`rekey check`: read every output topic after a run and verify it against the generator's manifest."""
