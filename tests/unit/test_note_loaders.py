"""The notes loaders (core/notes/loaders/): the real notes folder of ../shared/fixtures/notes_qa, and every
reason a file is skipped, each with a small file written here."""

from __future__ import annotations

import io
import json
import os
import re
import unicodedata
import zipfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gallery_app.core.notes.documents import NoteDocument, NoteSkipped
from gallery_app.core.notes.loaders import SUPPORTED_EXTENSIONS, load_file
from gallery_app.core.units import describe_size
from tests.conftest import SHARED_FIXTURES, require_shared_fixtures

NOTES_QA = SHARED_FIXTURES / "notes_qa"
FOLDER = NOTES_QA / "folder"
VAULT = FOLDER / "Vault of Knowledge"


def normalised(text: str) -> str:
    """notes_qa's README: quotes are compared after NFKC and with every run of whitespace one space."""
    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", text)).strip()


def skip_reason(path: Path, **kwargs) -> str:
    with pytest.raises(NoteSkipped) as raised:
        load_file(path, **kwargs)
    return raised.value.reason


def section_with(documents: NoteDocument | list[NoteDocument], words: str):
    documents = [documents] if isinstance(documents, NoteDocument) else documents
    found = [section for document in documents for section in document.sections
             if normalised(words) in normalised(section.text)]
    assert found, f"no section says {words!r}"
    return found[0]


# ---------------------------------------------------------------------------------------------
# The real notes folder
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def folder() -> dict[str, list[NoteDocument] | NoteSkipped]:
    """Every file of notes_qa/folder, loaded once: relative path → its documents, or the NoteSkipped."""
    require_shared_fixtures()
    loaded: dict[str, list[NoteDocument] | NoteSkipped] = {}
    for path in sorted(FOLDER.rglob("*")):
        if path.is_file():
            try:
                loaded[path.relative_to(FOLDER).as_posix()] = load_file(path)
            except NoteSkipped as skip:
                loaded[path.relative_to(FOLDER).as_posix()] = skip
    return loaded


@pytest.mark.shared_fixtures
def test_every_file_of_the_real_folder_loads_and_no_document_is_empty(folder):
    assert len(folder) == 103
    skipped = {path: result.reason for path, result in folder.items() if isinstance(result, NoteSkipped)}
    assert skipped == {}
    for path, documents in folder.items():
        assert documents, path
        for document in documents:
            assert document.text.strip(), path
            assert all(section.text.strip() for section in document.sections), path
    kinds = {}
    for path, documents in folder.items():
        kinds.setdefault(documents[0].kind, set()).add(Path(path).suffix)
    assert kinds == {"markdown": {".md"}, "text": {".txt"}, "jsonl": {".jsonl"}, "pdf": {".pdf"}, "docx": {".docx"}}


@pytest.mark.shared_fixtures
def test_every_gold_quote_is_in_the_text_loaded_from_its_file(folder):
    # For .md the quotes avoid wikilink markup, so rewriting [[A|b]] keeps them; heading lines stay at the top
    # of their sections as written ("# Cloth Review"); front matter is the text of a note that has only that
    # ("pages: 528"). PDF and DOCX quotes were taken from pypdf and python-docx; PDFium reads the same words.
    missing = []
    questions = [json.loads(line) for line in (NOTES_QA / "questions.jsonl").read_text("utf-8").splitlines()]
    for question in questions:
        for gold in question["gold"]:
            documents = folder[gold["file"]]
            text = normalised("\n".join(document.text for document in documents))
            if normalised(gold["quote"]) not in text:
                missing.append((question["id"], gold["file"], gold["quote"]))
    assert sum(len(question["gold"]) for question in questions) == 27
    assert missing == []


@pytest.mark.shared_fixtures
def test_a_vault_notes_headings_are_its_sections_heading_paths(folder):
    coffee = folder["Vault of Knowledge/03. Culture/Food and Drinks/Coffee.md"]
    assert [document.title for document in coffee] == ["Coffee"]
    americano = section_with(coffee, "Americano (1:2 ratio of Espresso:Water)")
    assert americano.heading_path == ("Types", "Main Types")
    assert americano.text.startswith("### Main Types\n")
    assert americano.page is None
    assert section_with(coffee, "Frappuccino Flavours").heading_path == (
        "Types", "Starbucks Coffee", "Frappuccino (Blended Beverages)", "Frappuccino Flavours")
    # A heading under a callout ends it, as in Obsidian: "### Grinder" right after "> [!NOTE]" lines.
    assert section_with(coffee, "Burr Grinder").heading_path == ("Equipment", "Grinder")
    # Setext headings ("Graphics Zone" over a line of dashes).
    zones = folder["Vault of Knowledge/01. Personal/Productivity/Setting Zones on PC.md"]
    assert section_with(zones, "Blender 3D").heading_path == ("Graphics Zone",)


@pytest.mark.shared_fixtures
def test_vault_markup_reads_as_obsidian_shows_it(folder):
    vault = {path: documents for path, documents in folder.items() if path.startswith("Vault of Knowledge/")}
    assert len(vault) == 71
    for path, documents in vault.items():
        text = documents[0].text
        assert "[[" not in text and "<span" not in text and "[!NOTE]" not in text.upper(), path
    retro = folder["Vault of Knowledge/02. To Share/Retro/Retro Gaming/Retro Emulation.md"][0].text
    assert "- Launchbox [PROPRIETARY]" in retro  # the <span style=…> around it is gone, its words are not
    blacklight = folder["Vault of Knowledge/01. Personal/Project Ideas/Blacklight OS.md"][0].text
    assert "Warning:\nRead this warning carefully to understand." in blacklight  # "> [!warning]" and its "> "
    assert "`backup-<Current Date>.zip`" in blacklight  # not HTML: kept
    website = folder["Vault of Knowledge/01. Personal/Personal Website Ideas.md"][0].text
    assert "- Refer Obsidian Plugins and Tools too" in website
    agile = folder["Vault of Knowledge/01. Personal/AVIASYS Related/Project Management/"
                   "Using Agile Model for a Hardware Project.md"][0].text
    assert ".png" not in agile  # ![[Budget Boundaries.png]]: a picture has no words here


@pytest.mark.shared_fixtures
def test_front_matter_becomes_properties_and_a_front_matter_only_note_states_them(folder):
    [book] = folder["kepano-obsidian/References/Out of Control.md"]
    assert book.title == "Out of Control"
    assert book.properties["pages"] == "528"
    assert book.properties["author"] == "Kevin Kelly"  # "[[Kevin Kelly]]" in a YAML list
    assert book.properties["genre"] == "Futurism, Nonfiction"
    assert book.properties["created"] == "2023-09-12"
    assert "pages: 528" in book.text.split("\n")
    # A body of headings over ![[….base]] embeds says nothing, so the properties come first.
    [person] = folder["kepano-obsidian/References/Kevin Kelly.md"]
    assert person.sections[0].text.split("\n")[0] == "categories: People"
    assert "![[" not in person.text and ".base" not in person.text
    assert [section.heading_path for section in person.sections[1:]] == [("Books",), ("Clippings",),
                                                                         ("Podcast episodes",)]
    # A cheat sheet's small --- header is front matter too; its "#" lines are comments, not headings.
    [tar] = folder["cheatsheets/tar.txt"]
    assert tar.kind == "text" and tar.properties == {"tags": "compression"}
    assert tar.text.startswith("# To extract an uncompressed archive:\ntar -xvf /path/to/foo.tar")
    assert [section.heading_path for section in tar.sections] == [()]


@pytest.mark.shared_fixtures
def test_pdf_sections_know_their_pages_and_the_outlines_headings(folder):
    [cheat_sheet] = folder["documents/github-git-cheat-sheet.pdf"]
    assert cheat_sheet.kind == "pdf" and cheat_sheet.title == "github-git-cheat-sheet"
    assert sorted({section.page for section in cheat_sheet.sections}) == [1, 2]
    assert section_with(cheat_sheet, "Lists version history for a file, including renames").page == 2
    [report] = folder["documents/carpentries/2020-01-long-term-report.pdf"]
    assert sorted({section.page for section in report.sections}) == list(range(1, 16))
    career = section_with(report, "The majority of long-term survey respondents are graduate students")
    assert (career.page, career.heading_path) == (1, ("Respondents Career Stage",))
    # The contents list on page 1 is not taken for the heading: its line has dots and a page number.
    assert section_with(report, "Contents").heading_path == ()
    # The outline says "Respondents' Gender Identity", the page "Respondents’ Gender Identity".
    gender = section_with(report, "Gender identity responses apply to U.S. survey respondents only")
    assert (gender.page, gender.heading_path) == (14, ("Respondents' Gender Identity",))
    for path in ("documents/github-git-cheat-sheet.pdf", "documents/carpentries/2018-instructor-training-report.pdf",
                 "documents/carpentries/2020-01-long-term-report.pdf"):
        text = folder[path][0].text
        assert text == unicodedata.normalize("NFKC", text) and "\r" not in text, path


@pytest.mark.shared_fixtures
def test_docx_paragraphs_under_their_headings(folder):
    [handout] = folder["documents/handouts/Carpentries_MotivationDemotivation.docx"]
    assert handout.kind == "docx" and handout.properties == {"author": "Tracy Teal"}
    # The handout uses no heading styles: its headings are bigger or bold lines, read as such.
    just = section_with(handout, "Use the J word (“just”).")
    assert just.heading_path == ("Motivation and Demotivation", "Demotivation – what not to do")
    value = section_with(handout, "Connect the material to students’ interests.")
    assert value.heading_path == ("Motivation and Demotivation", "Motivation – what to do",
                                  "Establish value – why is this useful?")
    [worksheet] = folder["documents/handouts/Carpentries_roles_worksheet_v4.docx"]
    assert section_with(worksheet, "_____ Mentors").heading_path == ("Carpentries Roles Worksheet",)


@pytest.mark.shared_fixtures
def test_jsonl_is_one_document_per_line_numbered_by_line(folder):
    documents = folder["exports/mdSilo-all.jsonl"]
    lines = (FOLDER / "exports/mdSilo-all.jsonl").read_text("utf-8").splitlines()
    assert len(documents) == len(lines) == 51
    assert [document.part for document in documents] == list(range(1, 52))
    assert all(document.kind == "jsonl" and not document.problems for document in documents)
    [milk] = [document for document in documents if "Milk-V Meles ($99 / $139)" in document.text]
    assert json.loads(lines[milk.part - 1])["title"] == milk.title
    [first] = [document for document in documents if document.part == 2]
    assert first.title == "3-body systems"
    assert "repeating orbits like 2-body systems." in first.text  # [[2-body systems]] unwrapped


# ---------------------------------------------------------------------------------------------
# Formats, on files written here
# ---------------------------------------------------------------------------------------------


def write(tmp_path: Path, name: str, content: bytes | str) -> Path:
    path = tmp_path / name
    path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
    return path


def test_markdown_links_embeds_callouts_html_and_comments(tmp_path):
    note = write(tmp_path, "Boiler.md", "\n".join([
        "---",
        "title: Boiler warranty",
        "tags: [home, \"[[Heating]]\"]",
        "bought: 2021-03-04",
        "empty:",
        "---",
        "Intro with [[Installer Jonas|Jonas]] and [[Heating#Pump]] and [[Boiler.md]].",
        "![[photo of the label.jpg]]",
        "![[Service log]]",
        "# Warranty <span style=\"color:red\">**important**</span>",
        "> [!tip]- Keep the receipt",
        "> It is in the blue folder.",
        "Valid until 2027 %% check again %% &amp; transferable<br>to a new owner.",
        "%% a comment",
        "over two lines %%",
        "`<b>kept</b> [[in code]]`",
        "```",
        "# not a heading",
        "[[not a link]]",
        "```",
        "## Parts",
        "- pump",
    ]))
    [document] = load_file(note)
    assert document.title == "Boiler warranty" and document.kind == "markdown"
    assert document.properties == {"tags": "home, Heating", "bought": "2021-03-04"}
    intro, warranty, parts = document.sections
    assert intro.heading_path == () and intro.text == (
        "Intro with Jonas and Heating > Pump and Boiler.\n\nService log")
    assert warranty.heading_path == ("Warranty important",)
    assert warranty.text.split("\n") == [
        "# Warranty **important**", "Tip: Keep the receipt", "It is in the blue folder.",
        "Valid until 2027  & transferable to a new owner.", "", "", "`<b>kept</b> [[in code]]`",
        "```", "# not a heading", "[[not a link]]", "```"]
    assert (parts.heading_path, parts.text) == (("Warranty important", "Parts"), "## Parts\n- pump")


def test_front_matter_that_is_not_yaml_stays_text_and_aliases_cannot_blow_up(tmp_path):
    [broken] = load_file(write(tmp_path, "a.md", "---\ntitle: [unclosed\n---\nBody."))
    assert broken.properties == {} and broken.text.startswith("---\ntitle: [unclosed\n---")
    bomb = "---\na: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n" \
           "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n" \
           "e: [*d, *d, *d, *d, *d, *d, *d, *d, *d]\n---\n"
    [document] = load_file(write(tmp_path, "bomb.md", bomb))
    assert all(len(value) <= 2000 for value in document.properties.values())
    assert document.text.startswith("a: x, x, x")


def test_docx_headings_tables_and_title(tmp_path):
    import docx

    word = docx.Document()
    word.add_heading("Boiler", 1)
    word.add_paragraph("Warranty until 2027.")
    word.add_heading("Service", 2)
    table = word.add_table(rows=2, cols=2)
    for (row, column), text in {(0, 0): "Part", (0, 1): "Price", (1, 0): "Pump", (1, 1): "120 EUR"}.items():
        table.cell(row, column).text = text
    word.add_heading("Contacts", 1)
    word.add_paragraph("Installer: Jonas")
    word.save(tmp_path / "house.docx")
    [document] = load_file(tmp_path / "house.docx")
    assert document.title == "house" and document.kind == "docx"
    assert [(section.heading_path, section.text) for section in document.sections] == [
        (("Boiler",), "Boiler\nWarranty until 2027."),
        (("Boiler", "Service"), "Service\nPart | Price\nPump | 120 EUR"),  # the table where it stands
        (("Contacts",), "Contacts\nInstaller: Jonas"),
    ]


def test_a_pdf_text_layer_page_by_page(tmp_path):
    path = write(tmp_path, "warranty.pdf", pdf_with_text([["Boiler warranty", "valid until 2027"], ["Page two"]]))
    [document] = load_file(path)
    assert [(section.page, section.text) for section in document.sections] == [
        (1, "Boiler warranty\nvalid until 2027"), (2, "Page two")]
    # Only an owner password (opening needs none, as in many downloaded PDFs): read as any other.
    pypdf = pytest.importorskip("pypdf")
    writer = pypdf.PdfWriter(clone_from=io.BytesIO(path.read_bytes()))
    writer.encrypt(user_password="", owner_password="owner", algorithm="RC4-128")
    buffer = io.BytesIO()
    writer.write(buffer)
    [opened] = load_file(write(tmp_path, "owner-only.pdf", buffer.getvalue()))
    assert opened.text == document.text


def test_jsonl_a_broken_line_is_said_and_left_out(tmp_path):
    lines = [json.dumps({"title": "Boiler", "text": "Warranty until 2027."}), "{not json",
             json.dumps(["a", "list"]), "", json.dumps({"title": "Empty", "text": "  "}),
             json.dumps({"content": "# Pump\nReplaced in 2024 by [[Jonas]]."}), json.dumps({"title": "No text"})]
    documents = load_file(write(tmp_path, "export.jsonl", "\n".join(lines)))
    assert [(document.part, document.title) for document in documents] == [(1, "Boiler"), (6, "export, line 6")]
    assert documents[0].problems == ("line 2: not JSON", "line 3: not a JSON object", "line 7: no text field")
    assert documents[1].sections[0].heading_path == ("Pump",)
    assert documents[1].text == "# Pump\nReplaced in 2024 by Jonas."
    assert skip_reason(write(tmp_path, "broken.jsonl", "{nope\n[1]\n")) == (
        "no usable line in the JSONL file (line 1: not JSON; line 2: not a JSON object)")


def test_text_in_other_encodings_is_read(tmp_path):
    latin = "Café crème brûlée à la française, très bon. Über Größe.\n"
    assert load_file(write(tmp_path, "latin1.txt", latin.encode("latin-1")))[0].text == latin.strip()
    quotes = "He said “hello” – and left… €5"
    assert load_file(write(tmp_path, "cp1252.txt", quotes.encode("cp1252")))[0].text == quotes
    note = "Kessel: Garantie bis 2027\r\nPumpe getauscht\r\n"
    for encoding in ("utf-16", "utf-16-le", "utf-16-be", "utf-8-sig"):
        [document] = load_file(write(tmp_path, f"{encoding}.txt", note.encode(encoding)))
        assert document.text == "Kessel: Garantie bis 2027\nPumpe getauscht", encoding
    # UTF-8 with one line from a Latin-1 file pasted in, and cut in the middle of its last "é".
    german = "Grüße aus München: Kessel geprüft, Pumpe erneuert, Rechnung über 120 €.\n" * 2
    raw = german.encode("utf-8") + "Reçu: café".encode("latin-1") + "\nFin é".encode("utf-8")[:-1]
    text = load_file(write(tmp_path, "mixed.md", raw))[0].text
    assert text.startswith(german.strip()) and text.endswith("Re\ufffdu: caf\ufffd\nFin")
    cyrillic = "Гарантия на котёл до 2027 года, насос заменён."
    assert load_file(write(tmp_path, "cp1251.md", cyrillic.encode("cp1251")))[0].text == cyrillic


# ---------------------------------------------------------------------------------------------
# Every reason a file is skipped
# ---------------------------------------------------------------------------------------------


def test_skip_password_protected_pdf(tmp_path):
    pypdf = pytest.importorskip("pypdf")
    writer = pypdf.PdfWriter(clone_from=io.BytesIO(pdf_with_text([["secret boiler notes"]])))
    writer.encrypt(user_password="secret", owner_password="owner", algorithm="RC4-128")
    buffer = io.BytesIO()
    writer.write(buffer)
    assert skip_reason(write(tmp_path, "locked.pdf", buffer.getvalue())) == "password-protected PDF"


def test_skip_scanned_pdf_without_a_text_layer(tmp_path):
    from PIL import Image, ImageDraw

    page = Image.new("RGB", (600, 300), "white")
    ImageDraw.Draw(page).text((20, 20), "Boiler warranty (a picture of words)", fill="black")
    page.save(tmp_path / "scan.pdf", "PDF")
    assert skip_reason(tmp_path / "scan.pdf") == "scanned PDF without a text layer"


def test_skip_damaged_pdf(tmp_path):
    whole = pdf_with_text([["Boiler warranty"]])
    assert skip_reason(write(tmp_path, "cut.pdf", whole[:len(whole) // 2])).startswith("damaged PDF: ")
    assert skip_reason(write(tmp_path, "fake.pdf", b"%PDF-1.4 nothing else")).startswith("damaged PDF: ")


def test_skip_damaged_word_files(tmp_path):
    import docx

    word = docx.Document()
    word.add_paragraph("Boiler warranty")
    word.save(tmp_path / "whole.docx")
    whole = (tmp_path / "whole.docx").read_bytes()
    assert skip_reason(write(tmp_path, "cut.docx", whole[:len(whole) // 2])) == (
        "damaged Word file: not a complete .docx (zip) file")
    other_zip = io.BytesIO()
    with zipfile.ZipFile(other_zip, "w") as archive:
        archive.writestr("hello.txt", "not a Word document")
    assert skip_reason(write(tmp_path, "zip.docx", other_zip.getvalue())).startswith("damaged Word file: ")
    ole = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(500)  # what Word writes when it encrypts a .docx
    assert skip_reason(write(tmp_path, "locked.docx", ole)).startswith("password-protected Word file")


def test_skip_a_word_file_that_unpacks_to_too_much(tmp_path, monkeypatch):
    import docx

    from gallery_app.core.notes.loaders import word

    document = docx.Document()
    document.add_paragraph("x" * 5000)
    document.save(tmp_path / "big.docx")
    monkeypatch.setattr(word, "MAX_UNPACKED_BYTES", 10_000)
    assert skip_reason(tmp_path / "big.docx").startswith("Word file that unpacks to ")


def test_skip_binary_files_with_a_text_name(tmp_path):
    from PIL import Image

    assert skip_reason(write(tmp_path, "data.txt", bytes(range(256)) * 4)) == "binary file, not text (it has NUL bytes)"
    Image.new("RGB", (8, 8)).save(tmp_path / "picture.png")
    png = (tmp_path / "picture.png").read_bytes()
    assert skip_reason(write(tmp_path, "notes.md", png)) == "binary file, not text: the file is a PNG image"
    assert skip_reason(write(tmp_path, "saved.txt", pdf_with_text([["x"]]))) == "binary file, not text: the file is a PDF"
    assert skip_reason(write(tmp_path, "controls.txt", bytes(range(1, 9)) * 100)) == "binary file, not text"


def test_skip_text_in_an_encoding_that_cannot_be_told(tmp_path):
    noise = bytes((i * 37 + 11) % 255 + 1 for i in range(2000))  # no NUL, not UTF-8, no language
    assert skip_reason(write(tmp_path, "noise.txt", noise)) == (
        "not UTF-8 text, and its encoding could not be recognised (save it as UTF-8)")


def test_skip_files_over_the_size_cap(tmp_path):
    path = write(tmp_path, "long.md", "boiler " * 300)
    assert skip_reason(path, max_bytes=1000) == (
        f"too large: {describe_size(2100)}, over the {describe_size(1000)} limit for a note")
    assert load_file(path, max_bytes=2100)


def test_skip_unknown_file_types(tmp_path):
    assert skip_reason(write(tmp_path, "notes.xyz", "words")) == "unknown file type .xyz"
    assert skip_reason(write(tmp_path, "README", "words")) == "unknown file type (no extension)"
    assert ".PDF".lower() in SUPPORTED_EXTENSIONS and ".MD".lower() in SUPPORTED_EXTENSIONS


@pytest.mark.parametrize("name, content", [
    ("empty.md", b""), ("spaces.txt", b" \n\t\n"), ("utf16-spaces.txt", "  \n ".encode("utf-16")),
    ("front-matter-without-values.md", b"---\nempty:\n---\n\n"), ("only-pictures.md", b"![[a.png]]\n![[b.jpg|300]]\n"),
    ("empty-lines.jsonl", b"\n\n"), ("comment.md", b"%% nothing to show %%\n"),
])
def test_skip_empty_notes(tmp_path, name, content):
    assert skip_reason(write(tmp_path, name, content)) == "empty note"


def test_skip_empty_word_and_pdf_files(tmp_path):
    import docx

    docx.Document().save(tmp_path / "blank.docx")
    assert skip_reason(tmp_path / "blank.docx") == "empty note"
    assert skip_reason(write(tmp_path, "blank.pdf", pdf_with_text([[]]))) == "scanned PDF without a text layer"


@pytest.mark.skipif(os.name == "nt", reason="symbolic links need privileges on Windows")
def test_skip_what_cannot_be_read(tmp_path):
    loop = tmp_path / "loop.md"
    loop.symlink_to(tmp_path / "loop.md")
    assert skip_reason(loop) == "a symbolic link that loops back on itself"
    dangling = tmp_path / "gone.md"
    dangling.symlink_to(tmp_path / "missing.md")
    assert skip_reason(dangling).startswith("the file is gone")
    (tmp_path / "folder.md").mkdir()
    assert skip_reason(tmp_path / "folder.md") == "a folder, not a file"


def test_hostile_markdown_lines_take_linear_time(tmp_path):
    import time

    lines = ["[[" + "|" * 50_000, "[[a|" + "|" * 50_000, "` <" * 20_000, "# " + " " * 50_000 + "x",
             "<span " * 20_000, "> " * 50_000]
    path = write(tmp_path, "hostile.md", "\n".join(lines))
    start = time.perf_counter()
    load_file(path)
    # Quadratic, the first line alone took 37 s; linear, all of them take a few hundredths.
    assert time.perf_counter() - start < 5


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(raw=st.one_of(st.binary(max_size=600), st.text(max_size=400).map(lambda s: s.encode("utf-8"))),
       extension=st.sampled_from(sorted(SUPPORTED_EXTENSIONS)))
def test_any_bytes_load_or_are_skipped_never_an_empty_document(tmp_path, raw, extension):
    path = write(tmp_path, "fuzz" + extension, raw)
    try:
        documents = load_file(path)
    except NoteSkipped as skip:
        assert skip.reason.strip()
        return
    assert documents and all(document.text.strip() for document in documents)


# ---------------------------------------------------------------------------------------------
# A PDF with a text layer, written by hand (Helvetica, one text line per line given)
# ---------------------------------------------------------------------------------------------


def pdf_with_text(pages: list[list[str]]) -> bytes:
    objects: list[bytes | None] = [b"<< /Type /Catalog /Pages 2 0 R >>", None,
                                   b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    kids = []
    for lines in pages:
        operators = ["BT /F1 12 Tf 72 720 Td 14 TL", *(f"({line}) Tj T*" for line in lines), "ET"]
        stream = "\n".join(operators).encode("latin-1")
        objects.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream))
        objects.append(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
                       b"/Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>" % len(objects))
        kids.append(len(objects))
    objects[1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(b"%d 0 R" % kid for kid in kids), len(kids))
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)
