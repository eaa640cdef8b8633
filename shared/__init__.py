"""rekey's pure core: keys, Java-parity partitioning, catalog, translation and sequencing. No I/O here."""
