"""`rekey status`: what an operator looks at first: lag per service group, dead letters, domain topic skew."""
