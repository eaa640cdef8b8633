"""The idempotent sink: a domain topic applied to a database table with version guards and a watermark."""
