import pytest

from motionkit.common.errors import DataError
from motionkit.common.files import read_json, write_json_atomic


def test_read_json_names_the_file_and_line_of_what_it_cannot_read(tmp_path):
    p = tmp_path / "a.json"
    write_json_atomic(p, {"x": [1, 2]}, indent=1)
    assert read_json(p) == {"x": [1, 2]}
    p.write_text('{\n "x": [1,\n')
    with pytest.raises(DataError, match=r"a\.json, line 3: malformed JSON"):
        read_json(p)
    p.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(DataError, match=r"a\.json: not a text file"):
        read_json(p)
    with pytest.raises(DataError, match=r"missing\.json: file not found"):
        read_json(tmp_path / "missing.json")
