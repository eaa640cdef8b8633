"""`rekey replay`: one org's records of a family, read from only the partitions that can hold them."""
