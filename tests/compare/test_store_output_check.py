"""A sweep's ``--store`` is checked as every other output is (``core.files.check_output_path``),
its errors naming ``--store``: a missing folder, a folder, a folder that takes no file are refused;
an existing store file is appended to."""

from __future__ import annotations

import json
import os

import pytest

from ppverify.core.errors import ParameterError
from ppverify.sweep.store import Store, read_store, store_lock


@pytest.fixture
def here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # short relative paths in the messages
    return tmp_path


@pytest.mark.parametrize("open_store", [Store, store_lock])
def test_a_missing_folder_reads_as_every_output(here, open_store):
    with pytest.raises(ParameterError) as exc, open_store("reslts/s.jsonl"):
        pass
    # the words of check_output_path for --out, --save, ...: "folder F does not exist"
    assert str(exc.value) == "parameter --store=reslts/s.jsonl: folder reslts does not exist"
    assert not (here / "reslts").exists()


def test_a_folder_is_refused(here):
    (here / "d").mkdir()
    with pytest.raises(ParameterError, match=r"^parameter --store=d: is a directory; give a file name$"):
        Store("d")


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="needs a folder that takes no file")
def test_a_folder_that_takes_no_file_is_refused():
    with pytest.raises(ParameterError, match=r"^parameter --store=/proc/s\.jsonl: cannot write in its folder /proc"):
        Store("/proc/s.jsonl")


def test_an_existing_store_is_appended_to(here):
    (here / "s.jsonl").write_text(json.dumps({"point": "a"}) + "\n")
    with store_lock("s.jsonl"), Store("s.jsonl") as store:
        store.write([{"point": "b"}])
    assert [r["point"] for r in read_store("s.jsonl")] == ["a", "b"]
