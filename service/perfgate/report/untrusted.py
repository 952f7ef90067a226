"""Untrusted strings made inert in GitHub markdown: names in code spans, other text escaped.

Benchmark keys, params, metric and op names, units, branch names, labels, warnings and noise
notes come from results documents, and a fork's results come from the fork's own code: anything
they hold must show as the text it is, never as a link, an image, raw HTML, an @mention, an
issue reference, a closed `<details>` or a broken table. Every such string reaches the comment
(and the job summary and check run, which carry the same markdown) through one of these helpers.
"""

from __future__ import annotations

import re

# Control characters (newlines and tabs included) and Unicode line/paragraph separators: one
# space, so a string can neither end a table row, open a block on a line of its own, nor break
# out of a mermaid fence.
_LINE_BREAKS = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")
_BACKTICK_RUN = re.compile(r"`+")
# Numeric character references, not backslashes: they stay inert inside raw HTML too (a
# `<details><summary>` line is an HTML block on GitHub, where a backslash escapes nothing), and
# the table splitter never sees a `|` in `&#124;`.
_ENTITIES = {
    "&": "&amp;",
    "<": "&lt;",
    ">": "&gt;",
    "\\": "&#92;",
    "`": "&#96;",
    "*": "&#42;",
    "_": "&#95;",
    "[": "&#91;",
    "]": "&#93;",
    "|": "&#124;",
    "#": "&#35;",
    "!": "&#33;",
    "~": "&#126;",
    "$": "&#36;",
}
# After `@` or `#`: GitHub links mentions and issue references in rendered text, where an entity
# is already decoded, so only a character between the sigil and the name stops it.
_ZERO_WIDTH_SPACE = "&#8203;"
_SIGILS = frozenset("@#")


def one_line(text: str) -> str:
    """`text` with every run of control characters and line separators turned into one space."""
    return _LINE_BREAKS.sub(" ", text)


def _intraword(text: str, index: int) -> bool:
    # An underscore between two letters or digits never starts or ends emphasis (CommonMark's
    # flanking rules), so `peak_memory` is left as written.
    return 0 < index < len(text) - 1 and text[index - 1].isalnum() and text[index + 1].isalnum()


def plain_text(text: str) -> str:
    """`text` as literal inline text: markdown and HTML metacharacters as character references,
    mentions and issue references broken by a zero-width space, on one line."""
    flat = one_line(text)
    out: list[str] = []
    for index, char in enumerate(flat):
        if char in _ENTITIES and not (char == "_" and _intraword(flat, index)):
            out.append(_ENTITIES[char])
        else:
            out.append(char)
        if char in _SIGILS and index + 1 < len(flat) and flat[index + 1].isalnum():
            out.append(_ZERO_WIDTH_SPACE)
    return "".join(out)


def code_span(text: str, *, in_table: bool = True) -> str:
    """`text` as a code span that nothing inside can close: fenced with more backticks than its
    longest run, padded when it starts or ends with a backtick, pipes escaped for table cells.

    Inside a code span GitHub renders no HTML, links, mentions or emphasis; the table splitter
    runs first, so a `|` needs its backslash even there (GFM turns `\\|` back into `|`). Outside
    a table (`in_table=False`) the backslash would show, so the pipe is left as it is.
    """
    content = one_line(text)
    if in_table:
        content = content.replace("|", "\\|")
    longest = max((len(run) for run in _BACKTICK_RUN.findall(content)), default=0)
    fence = "`" * (longest + 1)
    # CommonMark strips one space from each end when both ends have one: pad to keep them, and
    # pad a leading or trailing backtick so it is not read as part of the fence.
    if not content or content[0] in "` " or content[-1] in "` ":
        content = f" {content} "
    return f"{fence}{content}{fence}"


def code_block(text: str) -> str:
    """`text` on one line as a fenced code block that nothing inside can close: the fence is
    longer than the longest run of backticks in it (at least three)."""
    content = one_line(text)
    longest = max((len(run) for run in _BACKTICK_RUN.findall(content)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n{content}\n{fence}"
