"""The Avro sequence varint as a Spark column: the JVM side of `shared.avro.split` for the backfill's load step."""

from __future__ import annotations

from typing import Any


def varint_column(sequence: Any) -> Any:
    """Spark column: the Avro encoding of a non-negative long column (`zigzag_varint`, in the JVM)."""
    from pyspark.sql import functions as F

    zigzag = F.shiftleft(sequence.cast("long"), 1)

    def byte(i: int) -> Any:
        low7 = F.shiftright(zigzag, 7 * i).bitwiseAND(F.lit(0x7F))
        more = F.when(F.shiftright(zigzag, 7 * (i + 1)) > 0, F.lit(0x80)).otherwise(F.lit(0))
        return F.lpad(F.hex(low7.bitwiseOR(more)), 2, "0")

    parts = [byte(0)] + [F.when(F.shiftright(zigzag, 7 * i) > 0, byte(i)).otherwise(F.lit("")) for i in range(1, 10)]
    return F.unhex(F.concat(*parts))
