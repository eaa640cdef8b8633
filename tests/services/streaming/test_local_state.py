"""Local table state is wiped before an exactly-once start unless the last stop marked it clean."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.streaming.local_state import CLEAN_MARK, mark_clean, open_state_directory


def _store_with_data(path: Path) -> Path:
    table = path / "v1" / "tables" / "sequences-0.db"
    table.mkdir(parents=True)
    (table / "000001.sst").write_bytes(b"counter")
    return table


def test_exactly_once_wipes_state_left_by_a_crash(tmp_path: Path) -> None:
    table = _store_with_data(tmp_path / "rekey-acl")

    open_state_directory(tmp_path / "rekey-acl", exactly_once=True)

    assert not table.exists()
    assert (tmp_path / "rekey-acl").is_dir()


def test_exactly_once_keeps_state_after_a_clean_stop_and_unmarks_it_while_running(tmp_path: Path) -> None:
    table = _store_with_data(tmp_path / "rekey-acl")
    mark_clean(tmp_path / "rekey-acl")

    open_state_directory(tmp_path / "rekey-acl", exactly_once=True)

    assert (table / "000001.sst").read_bytes() == b"counter"
    assert not (tmp_path / "rekey-acl" / CLEAN_MARK).exists(), "a crash from here on must wipe it again"


@pytest.mark.parametrize("marked", [False, True])
def test_at_least_once_keeps_local_state_either_way(tmp_path: Path, marked: bool) -> None:
    table = _store_with_data(tmp_path / "rekey-acl")
    if marked:
        mark_clean(tmp_path / "rekey-acl")

    open_state_directory(tmp_path / "rekey-acl", exactly_once=False)

    assert table.exists()


def test_a_first_start_creates_the_directory(tmp_path: Path) -> None:
    open_state_directory(tmp_path / "new" / "rekey-acl", exactly_once=True)

    assert (tmp_path / "new" / "rekey-acl").is_dir()
