"""Notes cut into chunks by the embedder's own tokenizer: within the budget, exact spans, never mid-word,
never across pages, short sections together, with the context line the embedder reads first."""

from __future__ import annotations

import pytest

from gallery_app.core.notes.chunking import NoteChunkingConfig, chunk_file, context_line
from gallery_app.core.notes.documents import NoteDocument, NoteSection
from tests.text_embedders import WordHashEmbedder

BUDGET = 96


@pytest.fixture
def embedder():
    return WordHashEmbedder(max_tokens=512, passage_prefix="passage: ")


def chunks_of(embedder, *documents, budget=BUDGET, overlap=32, merge=True):
    return chunk_file(documents, embedder.count_tokens, max_tokens=embedder.max_tokens,
                      config=NoteChunkingConfig(max_tokens=budget, overlap_tokens=overlap, merge_sections=merge))


def words(count: int, stem: str = "word") -> str:
    return " ".join(f"{stem}{i}" for i in range(count))


LONG = "\n\n".join(f"Paragraph {n} says {words(n * 9, f'p{n}w')}. It ends here." for n in range(1, 12))


def test_every_chunk_is_an_exact_span_within_the_budget_in_the_embedders_tokens(embedder):
    document = NoteDocument("Coffee", "markdown", (NoteSection("Intro.", ("Coffee",)),
                                                   NoteSection(LONG, ("Coffee", "Brewing gear"))))
    chunks = chunks_of(embedder, document)
    assert len(chunks) > 4
    for number, chunk in enumerate(chunks):
        assert chunk.ordinal == number
        assert document.text[chunk.start:chunk.end] == chunk.text
        assert chunk.tokens == embedder.count_tokens(chunk.embedded) <= BUDGET
        assert chunk.embedded == f"{chunk.context}\n{chunk.text}"
    # Everything of the document is in some chunk.
    covered = set()
    for chunk in chunks:
        covered.update(range(chunk.start, chunk.end))
    assert all(i in covered for i, ch in enumerate(document.text) if not ch.isspace())


def test_no_chunk_starts_or_ends_inside_a_word(embedder):
    text = words(400) + "\n" + ". ".join(words(30, f"s{n}w") for n in range(10))
    document = NoteDocument("Words", "text", (NoteSection(text),))
    for chunk in chunks_of(embedder, document):
        assert chunk.start == 0 or text[chunk.start - 1].isspace()
        assert chunk.end == len(text) or text[chunk.end].isspace()


def test_only_a_word_longer_than_the_budget_is_cut_inside(embedder):
    key = "k" * 40 + "-".join(f"w{i}" for i in range(200))  # one "word": no space in it
    document = NoteDocument("Keys", "text", (NoteSection(f"before {key} after"),))
    chunks = chunks_of(embedder, document)
    assert "".join(chunk.text for chunk in chunks).replace(" ", "") == f"before{key}after"
    assert all(chunk.tokens <= BUDGET for chunk in chunks)


def test_a_chunk_never_spans_two_pages_and_knows_its_heading_path_and_page(embedder):
    document = NoteDocument("Report", "pdf", (NoteSection("Page one text.", (), 1),
                                              NoteSection("Methods here.", ("Methods",), 2),
                                              NoteSection("More methods.", ("Methods", "Sampling"), 2)))
    chunks = chunks_of(embedder, document, merge=False)
    assert [(c.text, c.heading_path, c.page) for c in chunks] == [
        ("Page one text.", (), 1), ("Methods here.", ("Methods",), 2), ("More methods.", ("Methods", "Sampling"), 2)]
    assert [c.context for c in chunks] == ["Report, page 1", "Report › Methods, page 2",
                                           "Report › Methods › Sampling, page 2"]
    # Short sections of one page share a chunk, under the headings they share; pages stay apart.
    merged = chunks_of(embedder, document)
    assert [(c.text, c.heading_path, c.page) for c in merged] == [
        ("Page one text.", (), 1), ("Methods here.\nMore methods.", ("Methods",), 2)]
    assert merged[1].context == "Report › Methods, page 2"


def test_short_sections_share_a_chunk_and_long_ones_are_cut_alone(embedder):
    sections = (NoteSection("# Coffee\n\nIntro.", ("Coffee",)), NoteSection("## Gear\n\nA V60.", ("Coffee", "Gear")),
                NoteSection("## Beans\n\n" + LONG, ("Coffee", "Beans")), NoteSection("## Water\n\nSoft.", ("Coffee", "Water")),
                NoteSection("# Tea\n\nSencha.", ("Tea",)))
    document = NoteDocument("coffee", "markdown", sections)
    chunks = chunks_of(embedder, document)
    assert chunks[0].text == "# Coffee\n\nIntro.\n## Gear\n\nA V60." and chunks[0].heading_path == ("Coffee",)
    assert chunks[0].context == "coffee"  # the text starts with its heading: said there
    beans = [c for c in chunks if "Paragraph" in c.text]
    assert len(beans) > 1 and all(c.heading_path == ("Coffee", "Beans") for c in beans)
    assert chunks[-1].text == "## Water\n\nSoft.\n# Tea\n\nSencha." and chunks[-1].heading_path == ()
    assert all(document.text[c.start:c.end] == c.text and c.tokens <= BUDGET for c in chunks)


def test_the_context_line_says_the_title_once(embedder):
    assert context_line("Coffee", ("Coffee", "Gear"), None) == "Coffee › Gear"
    assert context_line("coffee", ("Coffee",), 3) == "coffee, page 3"
    assert context_line("", (), None) == "Untitled"


def test_front_matter_is_read_with_the_first_chunk_only(embedder):
    document = NoteDocument("Out of Control", "markdown", (NoteSection(LONG, ("Notes",)),),
                            properties={"pages": "528", "categories": "Books"})
    first, second, *_ = chunks_of(embedder, document)
    assert first.context == "Out of Control › Notes\npages: 528; categories: Books"
    assert "pages" not in second.context


def test_a_note_that_is_only_front_matter_is_said_once(embedder):
    # The loader makes the properties its text (loaders/front_matter.py); they are not repeated as context.
    document = NoteDocument("Out of Control", "markdown", (NoteSection("rating: 7\npages: 528"),),
                            properties={"rating": "7", "pages": "528"})
    (chunk,) = chunks_of(embedder, document)
    assert chunk.embedded == "Out of Control\nrating: 7\npages: 528"


def test_consecutive_chunks_of_a_section_share_a_short_boundary_line(embedder):
    lines = "\n".join(f"- item {n}: {words(6, f'i{n}w')}" for n in range(40))
    document = NoteDocument("List", "markdown", (NoteSection(lines),))
    chunks = chunks_of(embedder, document)
    assert len(chunks) >= 3
    for before, after in zip(chunks, chunks[1:]):
        assert after.start < before.end  # the last line of one is the first of the next
        assert before.text.split("\n")[-1] == after.text.split("\n")[0]
    no_overlap = chunks_of(embedder, document, overlap=0)
    assert all(after.start > before.end for before, after in zip(no_overlap, no_overlap[1:]))


def test_documents_of_one_file_are_numbered_in_order(embedder):
    documents = [NoteDocument(f"Note {n}", "jsonl", (NoteSection(f"text {n}"),), part=n) for n in (1, 2, 3)]
    chunks = chunks_of(embedder, *documents)
    assert [(c.document, c.part, c.ordinal, c.title) for c in chunks] == [
        (0, 1, 0, "Note 1"), (1, 2, 1, "Note 2"), (2, 3, 2, "Note 3")]


def test_an_overlong_title_and_heading_path_is_shortened_to_leave_room_for_text(embedder):
    document = NoteDocument(words(200, "t"), "markdown", (NoteSection("the body", tuple(words(50, "h").split())),))
    (chunk,) = chunks_of(embedder, document)
    assert chunk.text == "the body" and chunk.tokens <= BUDGET
    assert embedder.count_tokens(chunk.context) <= BUDGET // 4 + 2


def test_the_budget_is_capped_at_the_embedders_window():
    small = WordHashEmbedder(max_tokens=64)
    document = NoteDocument("Coffee", "markdown", (NoteSection(LONG),))
    chunks = chunk_file([document], small.count_tokens, max_tokens=small.max_tokens)
    assert max(chunk.tokens for chunk in chunks) <= 64


def test_a_budget_with_no_room_for_text_is_refused(embedder):
    with pytest.raises(ValueError, match="no room"):
        chunks_of(embedder, NoteDocument("x", "text", (NoteSection("y"),)), budget=20)


def test_whitespace_only_sections_give_no_chunk(embedder):
    document = NoteDocument("Empty", "markdown", (NoteSection("  \n\n "), NoteSection("words", ("H",))))
    assert [(c.text, c.heading_path) for c in chunks_of(embedder, document)] == [("words", ("H",))]
