"""Read the text of a WhatsApp "Export chat" into messages.

WhatsApp writes one header per message, in the phone's locale at export time, e.g.

    [13/06/18, 21:25:15] Ana: text                 iOS
    13/06/2018, 21:25 - Ana: text                  Android
    7/1/16, 4:56:55 PM: Ana: text                  old iOS
    12/31, 10:00 - Ana: text                       old Android, no year
    2018. 6. 13. 오후 9:25 - Ana: text             Korean (the AM/PM word comes first)
    ١٣/٦/٢٠١٨، ٩:٢٥ م - Ana: text                   Arabic (digits and marker localised)

and every line that does not start with a header continues the message above it.

The work is done in four passes, all linear in the number of lines:

1. *Headers*: every line is cleaned of direction marks and BOMs, then matched
   against two anchored regexes (date first, or the rare time first). A match only records
   the raw numbers: whether "03/06" is 3 June or 6 March is not known yet.
2. *Date order*: decided per date *shape* (separator, number of fields, where a 4-digit year
   is), because an export can change style part way through (see `_decide_order`).
3. *Acceptance*: a header whose date or time is impossible is not a header. A header whose
   layout differs from the file's usual one is only believed if the difference is its date
   shape alone and it keeps the chat in time order; otherwise it is a line pasted from
   another chat and stays part of the message above it (see `_accept`).
4. *Messages*: header text split into sender and text, continuation lines joined with "\\n",
   and the kind decided (system notice, media placeholder, deleted, attachment, edited).

`parse_chat_text` never raises on any string: a file that is not a chat gives no messages and
all of its lines in ``skipped_lines``.
"""

from __future__ import annotations

import re
from array import array
from collections import Counter
from itertools import groupby
from collections.abc import Callable, Iterable, Sequence
from datetime import date, datetime

from gallery_app.core.chat.export_language import ENCRYPTION_NOTICES, export_language
from gallery_app.core.chat.messages import Message, MessageKind, ParsedChat

__all__ = ["parse_chat_text", "clean_text", "header_prefix", "is_placeholder", "attachment_caption"]

# ---------------------------------------------------------------------------------------------
# Characters removed before anything is matched (and from message text, as messages.py says)
# ---------------------------------------------------------------------------------------------

#: Bidirectional marks and the BOM. WhatsApp sprinkles U+200E/U+200F into headers, before
#: attachment names and system texts; right-to-left locales add U+061C and the isolates.
_DIRECTION_MARKS = frozenset(
    "\u200e\u200f\u061c\ufeff" + "".join(map(chr, range(0x202A, 0x202F))) + "".join(map(chr, range(0x2066, 0x206A)))
)
_MARKS_RE = re.compile("[" + "".join(sorted(_DIRECTION_MARKS)) + "]")  # re.sub is ~10x faster than str.translate here


def clean_text(text: str) -> str:
    """The text without direction marks and BOMs (everything else, control characters too, is kept)."""
    return _MARKS_RE.sub("", text)


# ---------------------------------------------------------------------------------------------
# Header regexes (matched on a cleaned line; `\d` also matches Arabic-Indic and other digits,
# and `int()` reads them, so no digit translation is needed)
# ---------------------------------------------------------------------------------------------

# Day, month and year in some order; "13. 6. 2018." and "2018. 6. 13." have a space after the
# separator and a final dot. The third field is missing in old Android exports ("12/31, 10:00").
_DATE = r"(?P<d1>\d{1,4})(?P<sep>[./-])\s?(?P<d2>\d{1,4})(?:(?P=sep)\s?(?P<d3>\d{1,4}))?\.?"
# Between date and time: a comma (Arabic comma too), a word ("klo", "à", "um" …), a dash (the
# "12.07.2017 - 22:35:22; Ana: text" layout R's rwhatsapp reads) or just spaces.
_CONNECTOR = r"\s*[,،]\s*|\s+(?:klo|kl\.|à|a las|às|alle|um|at|om|в|г\.,?)\s+|\s+-\s+|\s+"
# AM/PM words, in any locale's spelling, before the time (CJK, Korean, Hungarian, Turkish, Arabic
# browser exports …) or after it (everything else). Keys are the words without dots and spaces,
# lower-cased, so "P.M.", "p. m." and "pm" are one entry (see `_marker`).
_MARKER_WORDS = {
    "am": "am", "pm": "pm",                                      # English, Spanish "a. m.", Dutch "a.m." …
    "vorm": "am", "nachm": "pm",                                 # German
    "de": "am", "du": "pm",                                      # Hungarian "de." / "du."
    "dop": "am", "odp": "pm",                                    # Czech, Slovak
    "ap": "am", "ip": "pm",                                      # Finnish
    "fm": "am", "em": "pm",                                      # Swedish, Norwegian
    "öö": "am", "ös": "pm",                                      # Turkish
    "vm": "am", "nm": "pm",                                      # Afrikaans
    "上午": "am", "凌晨": "am", "早上": "am", "午前": "am", "오전": "am",
    "下午": "pm", "中午": "pm", "晚上": "pm", "午後": "pm", "오후": "pm",
    "ص": "am", "م": "pm", "قظ": "am", "بظ": "pm",                # Arabic, Persian
    "πμ": "am", "μμ": "pm",                                      # Greek
    "לפנה״צ": "am", "אחה״צ": "pm", 'לפנה"צ': "am", 'אחה"צ': "pm",  # Hebrew
    "ก่อนเที่ยง": "am", "หลังเที่ยง": "pm",                          # Thai
    "पूर्वाह्न": "am", "अपराह्न": "pm",                              # Hindi
}
# Latin words end at a word boundary ("Emma" is not "em" + "ma"); dots and inner spaces are optional.
_LATIN_MARKER = r"(?:[AaPp]\.?\s?[Mm]\.?|(?i:vorm|nachm|de|du|dop|odp|ap|ip|fm|em|öö|ös|vm|nm)\.?)(?!\w)"
_OTHER_MARKERS = sorted((w for w in _MARKER_WORDS if not w.isascii() and w not in ("öö", "ös")), key=len,
                        reverse=True)
_MARKER = (_LATIN_MARKER + "|" + "|".join(re.escape(w) for w in _OTHER_MARKERS)
           + r"|ق\.\s?ظ\.?|ب\.\s?ظ\.?|π\.\s?μ\.|μ\.\s?μ\.")
_TIME = (
    rf"(?:(?P<pre>{_MARKER})\s?)?"
    r"(?P<h>\d{1,2})[:.](?P<mi>\d{2})(?:[:.](?P<s>\d{2}))?"
    rf"(?:\s?(?P<post>{_MARKER}))?"
)
# After the time: "] " when the header opened with "[", otherwise " - " (or an EN/EM DASH),
# ": " (old iOS, some Finnish exports), "; " (after a dash-joined date and time) or plain spaces
# (some Hungarian/Croatian exports).
_TAIL = r"(?P<tail>(?(br)\s*\]\s*|(?:\s*[-–—]\s+|:\s+|;\s+|\s+)))"

_HEADER = re.compile(rf"(?P<br>\[)?\s*{_DATE}(?P<conn>{_CONNECTOR}){_TIME}{_TAIL}")
_HEADER_TIME_FIRST = re.compile(rf"(?P<br>\[)?\s*{_TIME}(?P<conn>\s*[,،]\s*|\s+){_DATE}{_TAIL}")
#: First characters a header can start with, besides a digit (time-first headers with a marker first).
_HEADER_START = frozenset("[" + "".join(w[0] for w in _OTHER_MARKERS) + "قبπμ")


#: A line is only tried as a header if it starts with one of these or a digit.
_LINE_STARTERS = _HEADER_START | _DIRECTION_MARKS


def _marker(word: str) -> str:
    """"am" or "pm" for a matched marker."""
    return _MARKER_WORDS.get(re.sub(r"[\s.]", "", word).lower(), "am")

# ---------------------------------------------------------------------------------------------
# Message text regexes
# ---------------------------------------------------------------------------------------------

#: "Name: text" or "Name:" at the end of the line. A colon not followed by a space ("John:.")
#: is not an author separator; such a line is a system line like any line without a sender.
_AUTHOR = re.compile(r"([^:]{1,100}?):(?:\s|$)")
_AUTHOR_NO_SPACE = re.compile(r"([^:\s][^:]{0,99}?):(?=\S)")

#: WhatsApp's "messages are end-to-end encrypted" line, in every language it is read in (one home:
#: export_language.ENCRYPTION_NOTICES, which also tells the export's language by it).
_ENCRYPTION_NOTICE = re.compile("|".join(ENCRYPTION_NOTICES.values()))

# System events, anchored at the start of the text: "<actor> <phrase>" with an actor written
# without a colon (so "Ana: I added salt" can never match: the actor cannot span "Ana:"), or a
# phrase that starts the text. Only precise phrasings. The phrases are only tried after a space,
# which keeps this long alternation cheap.
#: Joins, leaves and removals: common words, so only believed with WhatsApp's mark (iOS) or no sender.
_MEMBERSHIP_PHRASES = [
    r"added [^:]+$", r"removed [^:]+$", r"left\.?$",                                       # English
    r"(?:hat|hast|wurde|wurdest)\b.*\bhinzugefügt\.?$", r"(?:hat|hast|wurde|wurdest)\b.*\bentfernt\.?$",
    r"(?:hat|hast) die Gruppe verlassen\.?$",                                                  # German
    r"(?:te )?(?:añadió|agregó|eliminó) ", r"(?:salió|saliste)(?: del grupo)?\.?$",           # Spanish
    r"(?:vous )?(?:a|avez) (?:ajouté|retiré) ", r"(?:est parti|est partie|a quitté|êtes parti)",  # French
    r"(?:te )?(?:adicionou|removeu) ", r"saiu\.?$",                                            # Portuguese
    r"(?:ti )?(?:ha|hai) (?:aggiunto|rimosso) ", r"(?:è|sei) uscit[oa]\.?$",                  # Italian
    r"(?:heeft|hebt) .+ toegevoegd\.?$", r"(?:heeft|hebt) .+ verwijderd\.?$", r"(?:is|bent) vertrokken\.?$",
    r"menambahkan [^:]+$", r"mengeluarkan [^:]+$", r"keluar\.?$",                          # Indonesian
]
#: Phrasings no one types by accident.
_EVENT_PHRASES = [
    # English
    r"created (?:the )?group\b", r"created this group\b", r"joined using this group's invite link",
    r"changed the subject (?:from .* )?to ", r"changed the group name\b", r"(?:changed|deleted) this group's icon",
    r"(?:changed|deleted) the group description", r"changed (?:this group's|the group) settings",
    r"changed their phone number", r"changed to \+?[\d ]+$", r"updated the message timer",
    r"turned (?:on|off) disappearing messages", r"is a contact\.?$", r"(?:is|are) now an admin",
    # German
    r"(?:hat|hast) die Gruppe\b.*\berstellt\.?$", r"(?:ist|bist) .*Einladungslink.* beigetreten",
    r"(?:hat|hast) den Betreff\b.*\bgeändert", r"(?:hat|hast) das Gruppenbild (?:geändert|gelöscht)",
    r"(?:hat|hast) die Gruppenbeschreibung (?:geändert|gelöscht)", r"hat eine neue Telefonnummer",
    r"hat zu .+ gewechselt\.?$", r"(?:hat|hast) selbstlöschende Nachrichten",
    # Spanish
    r"(?:creó|creaste) el grupo", r"se unió usando el enlace de invitación",
    r"(?:cambió|cambiaste) el (?:asunto|nombre del grupo)",
    r"(?:cambió|cambiaste) (?:el ícono|el icono|la imagen|la foto) (?:de este|del) grupo",
    r"(?:cambió|cambiaste) la descripción del grupo",
    # French
    r"(?:a|avez) créé (?:le )?groupe", r"a rejoint ce groupe (?:via|avec|à l'aide du) lien",
    r"(?:a|avez) (?:changé|modifié) (?:le sujet|le nom du groupe|l'icône|la photo du groupe|la description)",
    # Portuguese
    r"criou o grupo", r"entrou usando o link de convite",
    r"(?:mudou|alterou) (?:o assunto|o nome do grupo|a imagem|a descrição)",
    # Italian
    r"(?:ha|hai) creato il gruppo", r"si è unit[oa] tramite il link d'invito",
    r"(?:ha|hai) (?:cambiato|modificato) (?:l'oggetto|l'immagine|la descrizione|il nome del gruppo)",
    # Dutch
    r"(?:heeft|hebt) (?:de )?groep .*aangemaakt", r"neemt deel via de uitnodigingslink",
    r"(?:heeft|hebt) deelgenomen via de uitnodigingslink",
    r"(?:heeft|hebt) (?:het onderwerp|de groepsnaam|de groepsafbeelding|het groepspictogram|de groepsbeschrijving)"
    r" gewijzigd",
    # Indonesian
    r"membuat grup\b", r"bergabung menggunakan tautan undangan grup ini",
    r"mengubah (?:subjek|nama grup|ikon grup|deskripsi grup)\b",
]
_OPENING_PHRASES = [
    r"You were (?:added|removed)\b", r"Your security code with .+ changed", r"You're now an admin",
    r"[^:]+?'s security code changed", r"(?:Deine|Die) Sicherheitsnummer\b.*\bgeändert",
    r"(?:Añadiste|Agregaste|Eliminaste) a ", r"Tu código de seguridad con .+ cambió",
    r"Votre code de sécurité avec .+ a changé", r"(?:O seu|Seu) código de segurança com .+ (?:mudou|foi alterado)",
    r"Il tuo codice di sicurezza con .+ è cambiato", r"(?:Je|Jouw) beveiligingscode met .+ is gewijzigd",
]
_SYSTEM_EVENT = re.compile(r"[^:]+? (?:" + "|".join(_EVENT_PHRASES + _MEMBERSHIP_PHRASES) + ")|"
                           + "|".join(_OPENING_PHRASES))
_PRECISE_EVENT = re.compile(r"[^:]+? (?:" + "|".join(_EVENT_PHRASES) + ")|" + "|".join(_OPENING_PHRASES))

_MEDIA_OMITTED = re.compile(
    r"<(?:Media omitted|Medien ausgeschlossen|Multimedia omitido|Archivo omitido|Médias omis|Fichier omis"
    r"|Mídia oculta|Mídia omitida|Arquivo de mídia oculto|Media weggelaten|Media omessi|Media omesso"
    r"|Без медиафайлов|Medya dahil edilmedi|Media tidak disertakan)>"
    r"|(?:image|video|audio|sticker|GIF|document|Contact card|photo|video note|voice message) omitted"
    r"|.+ document omitted"
    r"|(?:imagen|foto|video|vídeo|audio|sticker|GIF|documento|tarjeta de contacto) omitid[oa]"
    r"|(?:Bild|Video|Audio|Sticker|GIF|Dokument|Kontaktkarte) (?:weggelassen|ausgelassen)"
    r"|(?:image|vidéo|audio|autocollant|sticker|GIF|document|fiche contact|carte de contact)"
    r" (?:absente?|omise?|retirée?)"
    r"|(?:imagem|vídeo|áudio|figurinha|GIF|documento|cartão de contato|cartão do contato)"
    r" (?:ocultad[oa]|omitid[oa])"
    r"|(?:immagine|video|audio|sticker|GIF|documento|scheda contatto) (?:omess[oa]|esclus[oa])"
    r"|(?:afbeelding|video|audio|sticker|GIF|document|contactkaart) weggelaten",
    re.IGNORECASE,
)
#: iOS writes the word forms in angle brackets too, with a direction mark inside ("<‎image omitted>").
_BRACKETED = re.compile(r"<(?P<inner>[^<>]+)>")

#: Android's lines for a call, written as the caller's message: nothing a question could be answered by.
_CALL_NOTICE = re.compile(
    r"(?:Missed (?:group )?(?:voice|video) call|(?:Voice|Video) call|Verpasster (?:Sprach|Video)anruf"
    r"|Llamada (?:de voz |de video |grupal )?perdida|Videollamada perdida|Chamada (?:de voz |de vídeo )?perdida"
    r"|Appel (?:vocal|vidéo) manqué|Gemiste (?:spraak|video)oproep|Chiamata (?:vocale|video) persa"
    r"|Panggilan (?:suara|video) tak terjawab)(?:, .{1,40})?",
    re.IGNORECASE,
)

_DELETED = re.compile(
    r"(?:This message was deleted(?: by .+)?|You deleted this message|Diese Nachricht wurde gelöscht"
    r"|Du hast diese Nachricht gelöscht|Se eliminó este mensaje|Eliminaste este mensaje|Este mensaje fue eliminado"
    r"|Ce message a été supprimé|Vous avez supprimé ce message|Mensagem apagada|Essa mensagem foi apagada"
    r"|Esta mensagem foi apagada|Você apagou esta mensagem|Apagaste esta mensagem"
    r"|Questo messaggio è stato eliminato|Hai eliminato questo messaggio|Dit bericht is verwijderd"
    r"|Je hebt dit bericht verwijderd|Deze boodschap is verwijderd"
    r"|Pesan ini (?:telah )?dihapus|Anda menghapus pesan ini)\.?",
    re.IGNORECASE,
)

#: WhatsApp's "<This message was edited>" marker, matched at the last "<" of a message that ends
#: with ">" (found with rfind, so a long run of spaces before it costs one pass).
_EDITED = re.compile(
    r"<(?:This message was edited|Diese Nachricht wurde bearbeitet|Se editó este mensaje"
    r"|Ce message a été modifié|Mensagem editada|Esta mensagem foi editada|Questo messaggio è stato modificato"
    r"|Dit bericht is bewerkt|Pesan ini diedit)\.?>",
    re.IGNORECASE,
)

# Attachments: the markers WhatsApp writes in the phone's language. Each pattern starts with a
# literal "<" or "(", so searching a line costs one pass whatever the line holds (the name is
# then the text beside the marker, cut with string slicing, never by a backtracking regex).
#: iOS: "<attached: 00000042-PHOTO-2020-06-07-15-13-20.jpg>", also "< attached: NAME >".
_IOS_ATTACHED = re.compile(
    r"<\s*(?:attached|Anhang|adjunto|pièce jointe|anexado|allegato|bijlage|terlampir)\s*:\s*"
    r"(?P<name>[^<>]*[^<>\s])\s*>", re.IGNORECASE)
#: Android: "NAME (file attached)"; old iOS: "NAME <attached>" (the mark before "attached" is gone by now).
_NAME_THEN_MARKER = re.compile(
    r"\((?:file attached|Datei angehängt|archivo adjunto|fichier joint|arquivo anexado|bestand bijgevoegd"
    r"|file allegato|allegato|файл прикреплен|dosya ekli|file terlampir)\)"
    r"|<(?:attached|angehängt|adjunto|joint|anexado|allegato|bijgevoegd)>", re.IGNORECASE)
#: A file name is at most 255 bytes on every file system WhatsApp writes to.
_MAX_FILE_NAME = 255
#: iOS' counter before a file's own name ("00000021-Trip budget.pdf").
_IOS_COUNTER = re.compile(r"\d+-")

# ---------------------------------------------------------------------------------------------
# Pass 1: header candidates
# ---------------------------------------------------------------------------------------------

# Date orders per shape (number of fields, position of the 4-digit year or -1 for none).
_ORDERS: dict[tuple[int, int], tuple[str, ...]] = {
    (3, 2): ("DMY", "MDY"),
    (3, 0): ("YMD", "YDM"),
    (3, 1): ("MYD", "DYM"),        # "[06/2018/13, …]": seen in the wild, month first
    (3, -1): ("DMY", "MDY", "YMD"),  # two-digit years: YMD only when the others cannot be right
    (2, -1): ("DM", "MD"),         # old Android, no year
}
_DAY_FIRST = {"DMY": True, "MDY": False, "YMD": False, "YDM": True, "MYD": False, "DYM": True,
              "DM": True, "MD": False}
_REPORTED = {"DMY": "DMY", "MDY": "MDY", "YMD": "YMD", "YDM": "YMD", "MYD": "MDY", "DYM": "DMY",
             "DM": "DMY", "MD": "MDY"}
_MONTH_DAYS = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
_MIN_YEAR, _MAX_YEAR = 1970, 2200
_FIRST_YEAR = 2009  # WhatsApp's first release
_BUDDHIST_ERA = 543  # years between the Thai solar calendar and the Gregorian one


class _Header:
    """One line that looks like a message header; the date is still raw numbers."""

    __slots__ = ("index", "shape", "layout", "a", "b", "c", "unpadded", "dotted", "hour", "minute", "second",
                 "rest_start", "ymd", "stamp")

    def __init__(self, index, shape, layout, a, b, c, unpadded, dotted, hour, minute, second, rest_start):
        self.index, self.shape, self.layout = index, shape, layout
        self.a, self.b, self.c = a, b, c
        self.unpadded, self.dotted = unpadded, dotted
        self.hour, self.minute, self.second = hour, minute, second
        self.rest_start = rest_start
        self.ymd: tuple[int | None, int, int] | None = None
        self.stamp: datetime | None = None


def _match_header(index: int, line: str) -> _Header | None:
    """The header on a cleaned line, or None. Impossible times give None (a continuation line)."""
    first = line[:1]
    if not (first.isdigit() or first in _HEADER_START):
        return None
    m = _HEADER.match(line)
    time_first = False
    if m is None:
        m = _HEADER_TIME_FIRST.match(line)
        if m is None:
            return None
        time_first = True
    if not line[m.end():].strip():
        return None  # "2016-04-29 10:30:00" alone on a line is text, not a header
    d1, sep, d2, d3, conn, pre, h, mi, sec, post, br, tail = m.group(
        "d1", "sep", "d2", "d3", "conn", "pre", "h", "mi", "s", "post", "br", "tail")
    lengths = [len(d1), len(d2)] + ([len(d3)] if d3 is not None else [])
    if 3 in lengths:
        return None
    if d3 is None:
        if 4 in lengths or "," not in conn:
            return None  # a year-less date is only believed in the "12/31, 10:00" form
        year_at = -1
    else:
        if lengths.count(4) > 1:
            return None
        year_at = lengths.index(4) if 4 in lengths else -1
    hour, minute, second = int(h), int(mi), int(sec) if sec else 0
    rest_start = m.end()
    if post and hour > 12 and not time_first and not br and m.start("post") > m.end("mi") and tail.isspace():
        # "21:25 de Vries: hi" is a 24-hour clock and a name that starts like Hungarian "de."
        # ("23:59 PM - Bob: hi" is not: the marker is followed by the header's own dash).
        post, tail, rest_start = None, " ", m.start("post")
    if pre and post:
        return None  # one clock has one marker
    marker = _marker(pre or post) if pre or post else None
    if marker is not None and hour <= 12:
        # An hour past 12 is already on a 24-hour clock: some exports still write the marker after it
        # ("23:59 PM"), which then says nothing.
        hour = hour % 12 + (12 if marker == "pm" else 0)
    if hour > 23 or minute > 59 or second > 59:
        return None
    shape = _interned((sep, len(lengths), year_at))
    tail_kind = "]" if br else ":" if ":" in tail else ";" if ";" in tail else " " if tail.isspace() else "-"
    layout = _interned((tail_kind, time_first, shape))
    unpadded = lengths[0] == 1 or lengths[1] == 1
    dotted = bool(post) and "." in post and post[0] in "AaPp"
    return _Header(index, shape, layout, int(d1), int(d2), int(d3) if d3 is not None else None,
                   unpadded, dotted, hour, minute, second, rest_start)


_INTERNED: dict[tuple, tuple] = {}


def _interned(key: tuple) -> tuple:
    """One tuple object per shape and layout, not one per header (a big chat has a million headers)."""
    return _INTERNED.setdefault(key, key)


# ---------------------------------------------------------------------------------------------
# Pass 2: date order per shape
# ---------------------------------------------------------------------------------------------


def _ymd(order: str, a: int, b: int, c: int | None) -> tuple[int | None, int, int]:
    if order == "DMY":
        y, mo, d = c, b, a
    elif order == "MDY":
        y, mo, d = c, a, b
    elif order == "YMD":
        y, mo, d = a, b, c
    elif order == "YDM":
        y, mo, d = a, c, b
    elif order == "MYD":
        y, mo, d = b, a, c
    elif order == "DYM":
        y, mo, d = b, c, a
    elif order == "DM":
        y, mo, d = None, b, a
    else:  # "MD"
        y, mo, d = None, a, b
    if y is not None and y < 100:
        # WhatsApp exports only exist since 2009: "03" as a year is not 2003 but no year at all
        # (0, which `_valid` refuses), so a day or month field is not mistaken for a year.
        y = 2000 + y if y >= _FIRST_YEAR % 100 else 0
    elif y is not None and y >= _FIRST_YEAR + _BUDDHIST_ERA:
        y -= _BUDDHIST_ERA  # Thai phones count years from the Buddha: 2564 is 2021
    return y, mo, d


def _valid(ymd: tuple[int | None, int, int]) -> bool:
    y, mo, d = ymd
    if not 1 <= mo <= 12 or d < 1:
        return False
    if y is None:
        return d <= _MONTH_DAYS[mo - 1]  # 29 February allowed until the year is known
    if not _MIN_YEAR <= y <= _MAX_YEAR:
        return False
    if mo == 2:
        return d <= (29 if (y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)) else 28)
    return d <= _MONTH_DAYS[mo - 1]


#: A header's raw date fields (a, b, c); the order passes work on distinct dates, not on headers.
_Fields = tuple[int, int, "int | None"]


def _backward_steps(runs: Iterable[_Fields], order: str) -> int:
    """How often the date goes back in time from one header to the next, read in this order."""
    steps, previous = 0, None
    for a, b, c in runs:
        y, mo, d = _ymd(order, a, b, c)
        key = (y or 0, mo, d)
        if previous is not None and key < previous:
            steps += 1
        previous = key
    return steps


def _decide_order(headers: Sequence[_Header], language: Callable[[], tuple[str, str] | None]) -> tuple[str, str, str]:
    """(order, how, why) for the headers of one date shape; how is "numbers", "ordering" or "guess",
    why a sentence for a person (``ParsedChat.date_order_reason``).

    1. Numbers: the order under which most dates are possible (a first field above 12 can only
       be a day). Counting rather than eliminating, and believing a lead of a single date only
       when the time order agrees (see `_believed`), means one stray line cannot flip the file.
    2. Ordering: a chat is written in time order, so the reading with fewer steps back in time
       between consecutive headers wins.
    3. Guess (see `_guess`).
    """
    shape = headers[0].shape
    orders = _ORDERS[(shape[1], shape[2])]
    dates = Counter((h.a, h.b, h.c) for h in headers)
    runs = [fields for fields, _ in groupby((h.a, h.b, h.c) for h in headers)]  # a day's headers are one run
    counts = {o: _count_valid(dates, o) for o in orders}
    if len(orders) == 3:
        # A two-digit first field is a year only when neither day-first nor month-first can be right.
        rival = max(("DMY", "MDY"), key=counts.get)
        if counts["YMD"] > counts[rival] and _believed("YMD", rival, counts, runs):
            return "YMD", "numbers", _only_reading(headers, "YMD", rival)
        del counts["YMD"]
    best = max(counts.values())
    tied = [o for o in counts if counts[o] == best]
    if len(tied) == 1:
        rival = max((o for o in counts if o != tied[0]), key=counts.get)
        if _believed(tied[0], rival, counts, runs):
            return tied[0], "numbers", _only_reading(headers, tied[0], rival)
        tied.append(rival)
    both = [f for f in runs if all(_valid(_ymd(o, *f)) for o in tied)]
    steps = {o: _backward_steps(both, o) for o in tied}
    fewest = min(steps.values())
    if list(steps.values()).count(fewest) == 1:
        order = min(steps, key=steps.get)
        rival = max(steps, key=steps.get)
        return order, "ordering", (f"the messages are in time order only read {_READING[order]} (read "
                                   f"{_READING[rival]}, the date goes back {steps[rival]} times)")
    order, why = _guess(tied, headers, language)
    return order, "guess", why


#: How a person says each order.
_READING = {"DMY": "day first", "MDY": "month first", "YMD": "year first", "YDM": "year first, then the day",
            "MYD": "month, year, day", "DYM": "day, year, month", "DM": "day first", "MD": "month first"}


def _only_reading(headers: Sequence[_Header], order: str, rival: str) -> str:
    """Why the numbers chose `order`: the first date that can only be read that way."""
    for h in headers:
        if _valid(_ymd(order, h.a, h.b, h.c)) and not _valid(_ymd(rival, h.a, h.b, h.c)):
            sep = h.shape[0]
            written = sep.join(str(n) for n in (h.a, h.b, h.c) if n is not None)
            return f"\"{written}\" on line {h.index + 1} is a date only read {_READING[order]}"
    return f"more dates are possible read {_READING[order]} than {_READING[rival]}"


def _believed(best: str, rival: str, counts: dict[str, int], runs: list[_Fields]) -> bool:
    """Whether `best`, under which more dates are possible than under `rival`, is the file's order.

    A lead of two dates or more is. A lead of one date is believed unless reading the file in
    `best` order goes back in time more often than reading it in `rival` order: then that one date
    is a stray line (a flipped digit: "[33/04/24" among "[03/04/24" headers is only possible as
    2033-04-24, and puts the chat out of order), not evidence.
    """
    if counts[best] - counts[rival] > 1:
        return True

    def steps(order: str) -> int:
        return _backward_steps((f for f in runs if _valid(_ymd(order, *f))), order)

    return steps(best) <= steps(rival)


def _guess(tied: list[str], headers: Sequence[_Header],
           language: Callable[[], tuple[str, str] | None]) -> tuple[str, str]:
    """(order, why): the likelier order when the numbers and the ordering cannot tell.

    Day first is the rule (most of the world writes it), with one exception: an English-language
    export (``export_language``: WhatsApp's own words in it) with unpadded slash dates and a
    two-digit year ("2/11/19") is the shape WhatsApp writes for en_US, month first. A
    Spanish-style "p. m." marker rules that out.
    """
    undecided = "no date in the file tells day from month"
    if "YMD" in tied:
        return "YMD", f"{undecided}; a two-digit first field is read as the year"
    if "MYD" in tied:
        return "MYD", f"{undecided}; read month, year, day"
    sep, fields, year_at = headers[0].shape
    day_first = "DM" if fields == 2 else "DMY"
    if any(h.dotted for h in headers):
        return day_first, f"{undecided}; the clock says \"p. m.\", written by Spanish-language phones, which put the day first"
    found = language()
    us_shape = sep == "/" and year_at == -1 and any(h.unpadded for h in headers)
    if found is None:
        return day_first, f"{undecided} and WhatsApp's own words are not in it; day first, as most of the world writes"
    name, evidence = found
    if name == "English" and us_shape:
        return ("MD" if fields == 2 else "MDY"), (
            f"{undecided}; the export is in English ({evidence}) with dates written like 2/11/19, WhatsApp's"
            " US English layout, which puts the month first")
    if name == "English":
        return day_first, (f"{undecided}; the export is in English ({evidence}) but its dates are not written"
                           " the US way (2/11/19), so day first")
    return day_first, f"{undecided}; the export is in {name} ({evidence}), which puts the day first"


def _assign_orders(candidates: list[_Header], rests: Iterable[str]) -> dict[tuple, tuple[str, str]]:
    """(order, why) per date shape."""
    by_shape: dict[tuple, list[_Header]] = {}
    for h in candidates:
        by_shape.setdefault(h.shape, []).append(h)
    language_cache: list[tuple[str, str] | None] = []

    def language() -> tuple[str, str] | None:  # searched once, and only if a guess is needed
        if not language_cache:
            language_cache.append(export_language(rests))
        return language_cache[0]

    decided = {shape: _decide_order(headers, language) for shape, headers in by_shape.items()}
    # A shape that gave no evidence of its own follows a shape with the same separator that did
    # ("[1.2.2019, …]" in a file of "[19.04.19, …]" headers is day first as well).
    result: dict[tuple, tuple[str, str]] = {}
    for shape, (order, how, why) in decided.items():
        if how == "guess":
            sure = [(len(by_shape[s]), decided[s][0], decided[s][2]) for s in decided
                    if s[0] == shape[0] and decided[s][1] != "guess"]
            if sure:
                _, sure_order, sure_why = max(sure)
                day_first = _DAY_FIRST[sure_order]
                followed = next((o for o in _ORDERS[(shape[1], shape[2])] if _DAY_FIRST[o] == day_first
                                 and _count_valid(Counter((h.a, h.b, h.c) for h in by_shape[shape]), o)
                                 == len(by_shape[shape])), None)
                if followed is not None:
                    order, why = followed, f"like the file's other dates: {sure_why}"
        result[shape] = (order, why)
    return result


def _count_valid(dates: Counter[_Fields], order: str) -> int:
    """How many headers have a possible date in this order (`dates`: how many headers per date)."""
    return sum(n for fields, n in dates.items() if _valid(_ymd(order, *fields)))


def _fill_years(candidates: list[_Header], today: date) -> None:
    """Years for old Android headers without one ("12/31, 10:00").

    Taken from the nearest earlier header that has a year (counting a new year each time the
    month/day goes backwards, 12/31 → 1/1); before the first such header, from the next one,
    walking backwards. With no year anywhere, the last message is taken to be from the last
    twelve months (this year, or last year if its day is still to come) and earlier ones are
    counted back from it.
    """
    if not any(h.ymd is not None and h.ymd[0] is None for h in candidates):
        return
    dated = [h for h in candidates if h.ymd is not None]
    pending: list[_Header] = []
    year: int | None = None
    last_md: tuple[int, int] | None = None
    for h in dated:
        y, mo, d = h.ymd
        if y is None:
            if year is None:
                pending.append(h)
                continue
            if last_md is not None and (mo, d) < last_md:
                year += 1
            h.ymd = (year, mo, d)
        else:
            year = y
        last_md = (mo, d)
    if pending:
        following = next((h for h in dated if h.ymd[0] is not None), None)
        if following is not None:
            year, later = following.ymd[0], following.ymd[1:]
        else:
            later = pending[-1].ymd[1:]
            year = today.year if later <= (today.month, today.day) else today.year - 1
        for h in reversed(pending):
            _, mo, d = h.ymd
            if (mo, d) > later:
                year -= 1
            h.ymd = (year, mo, d)
            later = (mo, d)


# ---------------------------------------------------------------------------------------------
# Pass 3: acceptance
# ---------------------------------------------------------------------------------------------


def _accept(candidates: list[_Header]) -> list[_Header]:
    """The headers that start messages (in line order).

    Most headers share one layout: the same separator after the time ("] ", " - ", ": ", " ")
    and the same date shape. WhatsApp may change the date style part way through an export
    (the phone's locale changed), never the rest, so a header that differs in more than its
    date shape is a line of text. One that differs only in its date shape is believed if it
    keeps the chat in time order (not before the previous message, not after the next header in
    the usual layout): exports that switch style stay whole, and a line pasted from another chat
    ("[1.9.19, 00:00:00] …" among "[17.9.2019, …]" headers) stays part of its message.
    """
    valid = [h for h in candidates if h.stamp is not None]
    if not valid:
        return []
    usual = Counter(h.layout for h in valid).most_common(1)[0][0]
    next_usual: list[datetime | None] = [None] * len(valid)
    upcoming = None
    for i in range(len(valid) - 1, -1, -1):
        next_usual[i] = upcoming
        if valid[i].layout == usual:
            upcoming = valid[i].stamp
    accepted: list[_Header] = []
    for i, h in enumerate(valid):
        if h.layout != usual:
            if h.layout[:2] != usual[:2]:
                continue
            if accepted and h.stamp < accepted[-1].stamp:
                continue
            if next_usual[i] is not None and h.stamp > next_usual[i]:
                continue
        accepted.append(h)
    return accepted


# ---------------------------------------------------------------------------------------------
# Pass 4: messages
# ---------------------------------------------------------------------------------------------


def _marked_at(raw: str, kept_index: int) -> bool:
    """Whether a direction mark sits right before the `kept_index`-th kept character of `raw`."""
    if raw.isascii():
        return False
    kept = 0
    for ch in raw:  # one pass: kept_index is the header and the sender, so this stops early
        if ch in _DIRECTION_MARKS:
            if kept == kept_index:
                return True
        elif kept == kept_index:
            return False
        else:
            kept += 1
    return False


_QUOTES = frozenset('"“”„«»')
#: WhatsApp's own lines are short; a longer text is a person's, and the event regexes (which
#: scan a line once per space before its first colon) are not run on it.
_MAX_SYSTEM_LINE = 2000


class _Body:
    """What the text after a header says: sender, first line, kind, attachment and its caption."""

    __slots__ = ("sender", "first", "kind", "attachment", "caption")

    def __init__(self, sender, first, kind, attachment=None, caption=None):
        self.sender, self.first, self.kind, self.attachment, self.caption = sender, first, kind, attachment, caption


def _classify(rest: str, raw: str, rest_start: int, senders: frozenset[str] = frozenset()) -> _Body:
    """The text after a header, read (`senders`: names already seen with "Name: " in this file)."""
    m = _AUTHOR.match(rest)
    if m is None:
        # "John Doe:." (no space after the colon) is a sender only when that name writes elsewhere
        # in the chat; otherwise a line without "Name: " is WhatsApp's own.
        tight = _AUTHOR_NO_SPACE.match(rest) if senders else None
        if tight is None or tight.group(1).strip() not in senders:
            return _Body(None, rest, MessageKind.SYSTEM)
        m = tight
    sender = m.group(1).strip()
    system_sized = len(rest) <= _MAX_SYSTEM_LINE
    # A group subject or description can hold ": " ("Ana changed the subject to "Trip: day 1"");
    # such a line has quotes or is long before its first colon, unlike a person's name. (The
    # event regex is only run then: it is too slow to try on every message.)
    if system_sized and (len(sender) > 40 or not _QUOTES.isdisjoint(sender)) and (
            _SYSTEM_EVENT.match(rest) or _ENCRYPTION_NOTICE.match(rest)):
        return _Body(None, rest, MessageKind.SYSTEM)
    body = rest[m.end():]
    first = body.strip()
    if _DELETED.fullmatch(first):
        return _Body(sender, body, MessageKind.DELETED)
    if first == "null" or _is_media_omitted(first):
        return _Body(sender, body, MessageKind.MEDIA)  # "null": Android's line for view-once media
    if _ENCRYPTION_NOTICE.match(body):
        return _Body(None, body, MessageKind.SYSTEM)  # 1:1 iOS chats put the contact's name on it
    # iOS puts the group name as author on group events, with a mark before the text ("Lisbon
    # trip: ‎Ana added Tomás"); Android puts the person on a few ("+49 …: +49 … updated the message
    # timer"). A person's own message that merely says "Ana added Tomás" has no mark, and for
    # those that start with their own name only the unmistakable phrasings count.
    if system_sized:
        if _marked_at(raw, rest_start + m.end()):
            if _SYSTEM_EVENT.match(body):
                return _Body(None, body, MessageKind.SYSTEM)
        elif body.startswith(sender + " ") and _PRECISE_EVENT.match(body):
            return _Body(None, body, MessageKind.SYSTEM)
    found = _find_attachment(first)
    if found:
        return _Body(sender, body, MessageKind.TEXT, *found)
    return _Body(sender, body, MessageKind.TEXT)


def _find_attachment(line: str) -> tuple[str, str] | None:
    """(file name, the caption written on the same line) when ``line`` carries an attachment marker.

    iOS: "<attached: NAME>", with a caption after it, and for a document its title (and page
    count) before it ("Trip budget.pdf • 3 pages <attached: 00000021-Trip budget.pdf>"), which is
    not a caption. Android and old iOS: "NAME (file attached)" / "NAME <attached>", the name
    first (without a " • 3 pages" count) and a caption after. Anything longer than a file name
    can be is text that merely mentions an attachment.
    """
    if "<" not in line and "(" not in line:
        return None
    m = _IOS_ATTACHED.search(line)
    if m:
        name = m.group("name").strip()
        before, after = line[:m.start()].strip(), line[m.end():].strip()
        own_name = name[_IOS_COUNTER.match(name).end():] if _IOS_COUNTER.match(name) else name
        if before.startswith(own_name) or "•" in before:
            before = ""  # the document's title, not words of the person
        if len(name) > _MAX_FILE_NAME:
            return None
        return name, " ".join(part for part in (before, after) if part)
    m = _NAME_THEN_MARKER.search(line)
    if m is None:
        return None
    name = line[:m.start()].strip()
    name = name.split(" • ", 1)[0].strip()  # "Trip budget.pdf • 3 pages"
    if not name or len(name) > _MAX_FILE_NAME or " (file attached)" in name:
        return None
    if " " in name and not _looks_like_file_name(name):
        return None
    return name, line[m.end():].strip()


def _looks_like_file_name(name: str) -> bool:
    """A name with spaces ("Trip budget.pdf", "Max Caulfield.vcf") ends in an extension."""
    stem, dot, extension = name.rpartition(".")
    return bool(stem and dot and 1 <= len(extension) <= 8 and extension.isalnum())


def _strip_edited(body: str) -> tuple[str, bool]:
    """The text without WhatsApp's "<This message was edited>" at its end, and whether it was there."""
    end = len(body.rstrip())
    if not end or body[end - 1] != ">":
        return body, False
    start = body.rfind("<", 0, end)
    if start < 0 or not _EDITED.fullmatch(body, start, end):
        return body, False
    kept = body[:start]
    trimmed = kept.rstrip()
    newline = kept.find("\n", len(trimmed))
    return (kept[:newline + 1] if newline >= 0 else trimmed), True


def _line_spans(text: str) -> tuple[array, array]:
    """Start and end offsets of every line of ``text``, without making a string per line.

    Only CR, LF and CRLF end a line: U+2028, U+0085, form feeds … are characters of a message.
    A final line end does not start an empty last line.
    """
    starts, ends = array("q", [0]), array("q")
    if "\r" in text:
        for m in _LINE_END.finditer(text):
            ends.append(m.start())
            starts.append(m.end())
    else:
        find, at = text.find, text.find("\n")
        while at >= 0:
            ends.append(at)
            starts.append(at + 1)
            at = find("\n", at + 1)
    ends.append(len(text))
    if len(starts) > 1 and starts[-1] == len(text):
        starts.pop()
        ends.pop()
    return starts, ends


_LINE_END = re.compile(r"\r\n?|\n")


def header_prefix(line: str) -> tuple[str, str] | None:
    """(how the header ends, the text after it) when ``line`` opens like a message header, else None.

    The end is "]", "-", ":" or " " (see ``_TAIL``). Unlike the parser, a header alone on the line
    counts: this is for telling text written to look like an export from an answer.
    """
    cleaned = clean_text(line).lstrip()
    header = _match_header(0, cleaned + " .")  # the dot stands in for the text a header needs after it
    if header is None:
        return None
    return header.layout[0], cleaned[header.rest_start:]


def _is_media_omitted(first: str) -> bool:
    if _MEDIA_OMITTED.fullmatch(first):
        return True
    bracketed = _BRACKETED.fullmatch(first)
    return bracketed is not None and _MEDIA_OMITTED.fullmatch(bracketed.group("inner").strip()) is not None


def is_placeholder(text: str) -> bool:
    """Whether ``text`` is only WhatsApp's stand-in for media, an attachment, a deleted message or a call."""
    first = clean_text(text).strip()
    if _is_media_omitted(first) or _DELETED.fullmatch(first) or _CALL_NOTICE.fullmatch(first):
        return True
    found = _find_attachment(first)
    return found is not None and not found[1]


def names_the_group(text: str) -> bool:
    """Whether WhatsApp's own line ``text`` names the group: it was created or renamed ("You created
    group "Trip"", "Ana changed the subject to "Trip: day 1""), with the name in quotes in every language.
    Such a line answers "What is this group called?"; joins, leaves and security notices quote nothing."""
    return any(ch in _QUOTES for ch in text)


def is_encryption_notice(text: str) -> bool:
    """Whether ``text`` is WhatsApp's line that a chat's messages are end-to-end encrypted (its first line)."""
    return _ENCRYPTION_NOTICE.match(clean_text(text).strip()) is not None


def attachment_caption(text: str) -> str | None:
    """What a stored message with an attachment says besides WhatsApp's marker (``Message.caption``
    as the parser made it: "" when nothing), or None when ``text`` carries no attachment marker.

    For showing a message whose photo is drawn in place of its "<attached: NAME>"."""
    first, _, rest = text.partition("\n")
    found = _find_attachment(first)
    if found is None:
        return None
    more = rest.split("\n") if rest else []
    return "\n".join([found[1], *more] if found[1] else more)


def parse_chat_text(text: str, *, today: date | None = None) -> ParsedChat:
    """Messages of a WhatsApp chat export (see the module docstring). Never raises on a str.

    `today` anchors the year of exports written without years (default: the real today).
    Memory: besides ``text`` and the messages, a few bytes per line and per header; lines are
    sliced out of ``text`` when they are read, never all held at once.
    """
    if not isinstance(text, str):
        raise TypeError("parse_chat_text expects the decoded text of the export")
    starts, ends = _line_spans(text)
    marks_sub = _MARKS_RE.sub

    def raw_line(i: int) -> str:
        return text[starts[i]:ends[i]]

    def cleaned_line(i: int) -> str:
        line = text[starts[i]:ends[i]]
        return line if line.isascii() else marks_sub("", line)

    candidates = []
    for i, (s, e) in enumerate(zip(starts, ends)):
        first = text[s:s + 1]
        if first.isdigit() or first in _LINE_STARTERS:
            line = text[s:e]
            h = _match_header(i, line if line.isascii() else marks_sub("", line))
            if h is not None:
                candidates.append(h)
    rests = (cleaned_line(h.index)[h.rest_start:] for h in candidates)
    orders = _assign_orders(candidates, rests) if candidates else {}
    read: dict[tuple, tuple | None] = {}  # one reading per distinct date and shape
    contradicting: list[_Header] = []  # impossible in the file's order, possible in another
    for h in candidates:
        key = (h.shape, h.a, h.b, h.c)
        if key not in read:
            ymd = _ymd(orders[h.shape][0], h.a, h.b, h.c)
            read[key] = ymd if _valid(ymd) else None
        h.ymd = read[key]
        if h.ymd is None and any(_valid(_ymd(o, h.a, h.b, h.c)) for o in _ORDERS[(h.shape[1], h.shape[2])]):
            contradicting.append(h)
    del read
    _fill_years(candidates, today or date.today())
    for h in candidates:
        if h.ymd is not None and h.ymd[0] is not None and _valid(h.ymd):
            h.stamp = datetime(h.ymd[0], h.ymd[1], h.ymd[2], h.hour, h.minute, h.second)

    accepted = _accept(candidates)
    del candidates
    result = ParsedChat()
    if accepted:
        usual = Counter(h.layout for h in accepted).most_common(1)[0][0]
        result.date_order = _REPORTED[orders[usual[2]][0]]
        result.date_order_reason = orders[usual[2]][1]
        result.date_conflicts = [
            (h.index + 1, raw_line(h.index), f"not a date read {_READING[orders[h.shape][0]]}, as the file's other "
             "dates are; kept as text of the message above")
            for h in contradicting if h.layout[:2] == usual[:2] and h.index > accepted[0].index]

    first_header = accepted[0].index if accepted else len(starts)
    result.skipped_lines = [(i + 1, line) for i in range(first_header) if (line := raw_line(i)).strip()]

    bodies = [_classify(cleaned_line(h.index)[h.rest_start:], raw_line(h.index), h.rest_start) for h in accepted]
    senders = frozenset(b.sender for b in bodies if b.sender is not None)
    messages = result.messages
    for n, h in enumerate(accepted):
        b, bodies[n] = bodies[n], None  # each body goes once its message holds the text
        if b.kind is MessageKind.SYSTEM and senders and ":" in b.first:
            b = _classify(b.first, raw_line(h.index), h.rest_start, senders)
        end = accepted[n + 1].index if n + 1 < len(accepted) else len(starts)
        while end > h.index + 1 and not text[starts[end - 1]:ends[end - 1]].strip():
            end -= 1  # blank lines before the next header belong to the layout, not the message
        more = [cleaned_line(i) for i in range(h.index + 1, end)] if end > h.index + 1 else []
        body = "\n".join([b.first, *more]) if more else b.first
        edited = False
        if b.kind is not MessageKind.SYSTEM and ">" in body:
            body, edited = _strip_edited(body)
        caption = None
        if b.attachment is not None:
            caption = "\n".join([b.caption, *more] if b.caption else more)
            if edited:
                caption, _ = _strip_edited(caption)
        messages.append(Message(h.stamp, b.sender, body, b.kind, h.index + 1, b.attachment, edited, caption))
    return result
