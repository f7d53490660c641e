"""A record's saved body is parsed once per version of its file and looked at once within a pass's look
(record_dirs.RecordDir.load, record_store.one_look): a pass of a burst read every record several times. The
file on disk stays the truth: written again (whatever its size or time), the next look reads it again."""
import json
import os
import secrets
import shutil

import pytest

from ocx.node import record_dirs as record_dirs_module
from ocx.node.config import NodeConfig
from ocx.node.record_dirs import ParsedRecords, RecordDir, record_dirs
from ocx.node.record_store import one_look
from ocx.protocol import parse_message
from ocx.protocol.decide import OpenRecord
from tests.protocol.examples import record


def saved(tmp_path, rcvid: int) -> RecordDir:
    opened = OpenRecord(secrets.token_hex(32), parse_message(record(restrict={})), "t" * 40, rcvid=rcvid)
    directory = RecordDir(tmp_path / opened.hash)
    directory.save(opened, "forum")
    return directory


def written_again(directory: RecordDir, rcvid: int) -> None:
    """The file replaced by another process (`ocx node check` saving it anew, say): same size, same mtime."""
    path = directory.saved_file()
    before = os.stat(path)
    body = json.loads(path.read_text())
    body["rcvid"] = rcvid
    aside = path.with_name(".again")
    aside.write_text(json.dumps(body, indent=1) + "\n")
    os.utime(aside, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert os.stat(aside).st_size == before.st_size
    os.replace(aside, path)


def test_a_record_is_parsed_once_while_its_file_is_unchanged(tmp_path):
    directory = saved(tmp_path, 1)
    first = directory.load()
    with one_look():
        assert directory.load() is first
    assert RecordDir(directory.path).load() is first  # another RecordDir of the same directory


def test_a_record_written_again_on_disk_is_read_again_by_the_next_look(tmp_path):
    directory = saved(tmp_path, 1)
    with one_look():
        assert directory.load()[0].rcvid == 1
        written_again(directory, 7)
        assert directory.load()[0].rcvid == 1  # one look, one reading (only the node writes it, under its lock)
    with one_look():
        assert directory.load()[0].rcvid == 7
    written_again(directory, 8)
    assert directory.load()[0].rcvid == 8  # outside a look: the file as it is now


def test_a_record_saved_within_a_look_is_read_from_its_file(tmp_path):
    with one_look():
        directory = RecordDir(tmp_path / ("a" * 64))
        with pytest.raises(FileNotFoundError):
            directory.load()  # not saved yet: nothing remembered
        opened = OpenRecord("a" * 64, parse_message(record(restrict={})), "t" * 40, rcvid=3)
        directory.save(opened, "ticket")
        assert directory.load() == (opened, "ticket")


def test_a_removed_record_is_not_read_from_memory_by_the_next_look(tmp_path):
    directory = saved(tmp_path, 1)
    directory.load()
    directory.saved_file().unlink()
    with one_look(), pytest.raises(FileNotFoundError):
        directory.load()


def test_the_parsed_records_kept_are_bounded(tmp_path):
    kept = ParsedRecords(at_most=3)
    for rcvid in range(10):
        directory = saved(tmp_path, rcvid)
        opened, place_kind = kept.read(str(directory.path), directory.saved_file(), RecordDir._parse)
        assert (opened.rcvid, place_kind, len(kept) <= 3) == (rcvid, "forum", True)


def test_the_records_listed_are_those_on_disk_now(tmp_path):
    config = NodeConfig(name=f"listed-{secrets.token_hex(4)}", repository="/nonexistent/r.fossil",
                        url="http://127.0.0.1:9")
    root = config.state_dir / "records"
    try:
        first, second = saved(root, 1), saved(root, 2)
        listed = record_dirs(config)
        assert sorted(d.path for d in listed) == sorted([first.path, second.path])
        os.rename(first.path, first.path.with_name(".removing-" + first.path.name))  # cleanup.py's aside
        third = saved(root, 3)
        again = record_dirs(config)
        assert sorted(d.path for d in again) == sorted([second.path, third.path])
        assert next(d for d in again if d.path == second.path) is next(d for d in listed if d.path == second.path)
    finally:
        shutil.rmtree(config.state_dir, ignore_errors=True)


def test_a_record_no_longer_listed_is_forgotten_by_the_parsed_records_kept(tmp_path):
    """An answered record's directory removed (cleanup.py), the next listing forgets its parsed body: over
    a long day the node keeps those of the records on disk, not of every record it ever read."""
    config = NodeConfig(name=f"forgets-{secrets.token_hex(4)}", repository="/nonexistent/r.fossil",
                        url="http://127.0.0.1:9")
    root = config.state_dir / "records"
    try:
        first, second = saved(root, 1), saved(root, 2)
        for directory in record_dirs(config):
            directory.load()
        kept = record_dirs_module._PARSED._by_path
        assert {str(first.path), str(second.path)} <= set(kept)
        shutil.rmtree(first.path)
        record_dirs(config)
        assert str(first.path) not in kept and str(second.path) in kept
    finally:
        shutil.rmtree(config.state_dir, ignore_errors=True)
