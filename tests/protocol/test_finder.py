from ocx.protocol.finder import envelope, fenced_json_blocks, find_message

from .examples import NODE


def test_a_block_among_free_text_is_found():
    text = 'Please review.\n\n```json\n{"ocx": 1, "kind": "stop"}\n```\nthanks'
    assert find_message(text) == {"ocx": 1, "kind": "stop"}


def test_the_first_block_with_the_ocx_key_counts():
    text = '```json\n{"other": 1}\n```\n```json\n{"ocx": 1, "n": 1}\n```\n```json\n{"ocx": 1, "n": 2}\n```'
    assert find_message(text) == {"ocx": 1, "n": 1}


def test_blocks_that_are_not_json_fences_do_not_count():
    assert find_message('```\n{"ocx": 1}\n```') is None
    assert find_message('```python\n{"ocx": 1}\n```') is None
    assert find_message('inline ```json {"ocx": 1} ```') is None


def test_an_unclosed_fence_is_not_a_block():
    assert find_message('```json\n{"ocx": 1}\n') is None
    assert list(fenced_json_blocks("```json\n{}")) == []


def test_invalid_json_arrays_and_objects_without_ocx_are_skipped():
    assert find_message('```json\n{"ocx": 1,}\n```') is None
    assert find_message('```json\n[{"ocx": 1}]\n```') is None
    assert find_message('```json\n{"OCX": 1}\n```') is None


def test_a_repeated_key_makes_the_block_no_message():
    assert find_message('```json\n{"ocx": 1, "node": "a", "node": "b"}\n```') is None


def test_nan_and_infinity_are_not_json():
    assert find_message('```json\n{"ocx": NaN}\n```') is None


def test_crlf_and_indented_fences():
    assert find_message('x\r\n  ```json\r\n{"ocx": 1}\r\n  ```\r\n') == {"ocx": 1}


def test_a_multi_line_block():
    text = '```json\n{\n  "ocx": 1,\n  "kind": "record"\n}\n```'
    assert find_message(text) == {"ocx": 1, "kind": "record"}


def test_envelope_is_for_this_node_only_at_version_one():
    assert envelope({"ocx": 1, "kind": "record", "node": NODE}).is_for(NODE)
    assert not envelope({"ocx": 2, "kind": "record", "node": NODE}).is_for(NODE)
    assert not envelope({"ocx": True, "kind": "record", "node": NODE}).is_for(NODE)
    assert not envelope({"ocx": 1.0, "kind": "record", "node": NODE}).is_for(NODE)
    assert not envelope({"ocx": "1", "kind": "record", "node": NODE}).is_for(NODE)
    assert not envelope({"ocx": 1, "kind": "record", "node": "f" * 40}).is_for(NODE)
    assert not envelope({"ocx": 1, "kind": "record"}).is_for(NODE)
    assert not envelope({"ocx": 1, "node": NODE.upper()}).is_for(NODE.upper())
