"""The one Markdown transcript (`storyloom.saves.export.markdown_transcript`): untrusted text renders as written.

Rendered with markdown-it (Textual's own Markdown parser, so it is installed with the app):
whatever a model, a pack or a player writes, the transcript shows it as plain text, never as a
link, an image, HTML, emphasis, code, a heading, a list or a rule, and never carries an escape sequence.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from markdown_it.token import Token

from storyloom.engine.safety import safe_text
from storyloom.saves.export import markdown_text, markdown_transcript

PARSER = MarkdownIt("commonmark").enable(["table", "strikethrough"])

HOSTILE = [
    "![x](file:///etc/passwd) [click](javascript:alert(1)) <https://evil.example> <a href='x'>a</a>",
    "<img src=x onerror=alert(1)> <script>alert(1)</script> &lt;b&gt; &amp;",
    "*emph* **strong** _u_ __uu__ `code` ~~gone~~ | a | b |\n|---|---|",
    "# heading\n## two\n> quote\n- item\n+ item\n* item\n1. one\n2) two\n---\n===\n    code block\n```\nfence\n```",
    "\x1b[31mred\x1b[0m \x1b]0;title\x07 \x1b]8;;https://evil.example\x07link\x1b]8;;\x07 \u202eevil \u200bzero",
    "a \\ backslash \\*not emph\\* [label]: https://evil.example",
]


def rendered_text(markdown: str) -> tuple[str, set[str]]:
    """The text a viewer shows for `markdown`, and the kinds of token it used."""
    words: list[str] = []
    kinds: set[str] = set()

    def walk(tokens: list[Token]) -> None:
        for token in tokens:
            kinds.add(token.type)
            if token.type == "text":
                words.append(token.content)
            elif token.type in ("softbreak", "hardbreak"):
                words.append("\n")
            elif token.type == "paragraph_close":
                words.append("\n")
            if token.children:
                walk(token.children)

    walk(PARSER.parse(markdown))
    return "".join(words), kinds


PLAIN = {"paragraph_open", "paragraph_close", "inline", "text", "softbreak", "hardbreak"}


def assert_shown_as_written(source: str, markdown: str) -> None:
    text, kinds = rendered_text(markdown)
    assert kinds <= PLAIN, f"{source!r} became {kinds - PLAIN} in Markdown"
    assert text.split() == safe_text(source).split()


def test_hostile_text_renders_as_the_text_itself():
    for sample in HOSTILE:
        assert_shown_as_written(sample, markdown_text(sample))
        assert_shown_as_written(sample, markdown_text(sample, inline=True))
        assert "\n" not in markdown_text(sample, inline=True)
        assert "\x1b" not in markdown_text(sample) and "\u202e" not in markdown_text(sample)


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet=st.sampled_from(list("ab1 \n\t\\`*_[]()<>#|&~!-+=.:;/\"'{}") + ["\x1b", "\u202e"]), max_size=40)
)
def test_any_text_renders_as_itself(text):
    assert_shown_as_written(text, markdown_text(text))


def test_the_transcript_marks_out_each_exchange_and_nothing_inside_them_is_markup():
    transcript = markdown_transcript(
        HOSTILE[3],
        HOSTILE[0],
        [("take *all* [x](y)", HOSTILE[1])],
        byline="*by the offline narrator*",
        ending=(HOSTILE[2], "The end."),
        undone=2,
    )
    assert transcript.startswith("# \\# heading")
    kinds = [t.type for t in PARSER.parse(transcript)]
    inline = [c.type for t in PARSER.parse(transcript) if t.children for c in t.children]
    assert kinds.count("heading_open") == 2  # the title and the ending's
    assert kinds.count("hr") == 3  # before the exchange, the ending and the note on undone turns
    assert inline.count("strong_open") == 1 and inline.count("em_open") == 2  # the command; byline and note
    assert {"link_open", "image", "html_inline", "code_inline", "s_open"}.isdisjoint(inline)
    assert {
        "html_block",
        "code_block",
        "fence",
        "bullet_list_open",
        "ordered_list_open",
        "table_open",
        "blockquote_open",
    }.isdisjoint(kinds)
    assert "**> take \\*all\\* \\[x\\](y)**" in transcript
    assert "*2 turns were undone during play and not shown.*" in transcript
    html = PARSER.render(transcript)
    assert "<a " not in html and "<img" not in html and "<script" not in html and "<em>all" not in html
