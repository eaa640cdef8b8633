"""`rekey deadletters`: read the dead-letter topic back (counts, records) and redrive what now translates."""
