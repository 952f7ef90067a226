"""Parse --since values: an ISO-8601 date or timestamp, or an age like 30d, 12h, 2w."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

from perfgate.errors import UsageError

_AGE = re.compile(r"^(\d+)\s*([hdw])$")
_UNITS = {"h": timedelta(hours=1), "d": timedelta(days=1), "w": timedelta(weeks=1)}


def parse_since(text: str, *, now: datetime | None = None) -> datetime:
    """`2026-11-01`, `2026-11-01T12:00Z` or `30d` -> an aware UTC datetime."""
    age = _AGE.match(text.strip().lower())
    try:
        if age:
            return (now or datetime.now(timezone.utc)) - int(age.group(1)) * _UNITS[age.group(2)]
        parsed = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
        if parsed.tzinfo is None:
            return parsed.replace(tzinfo=timezone.utc)
        return parsed.astimezone(timezone.utc)
    except ValueError:
        raise UsageError(
            f"--since: {text!r} is neither a date (2026-11-01) nor an age (30d, 12h, 2w)"
        ) from None
    except OverflowError:
        raise UsageError(
            f"--since: {text!r} is out of range (a time within the years 1-9999 in UTC)"
        ) from None
