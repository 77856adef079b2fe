"""The check that a ``canasta`` command ended with one error line, shared by the CLI tests."""

from __future__ import annotations

import pytest


def one_error(capsys: pytest.CaptureFixture[str], command: str) -> str:
    """The single ``canasta COMMAND: error: ...`` line on stderr (progress lines aside), no traceback."""
    out, err = capsys.readouterr()
    lines = [line for line in err.splitlines() if line.strip() and "hand/s" not in line]
    assert "Traceback" not in out + err and len(lines) == 1, lines
    assert lines[0].startswith(f"canasta {command}: error: "), lines
    return lines[0]
