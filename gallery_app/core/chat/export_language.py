"""The language WhatsApp wrote an export in, from its own words (not the people's).

WhatsApp writes its notices in the phone's language: the end-to-end encryption line, media
placeholders, deleted-message markers, attachment markers and group events. When a file's dates
cannot tell day from month, that language is the next witness (``whatsapp._guess``): an English
export with US-shaped dates is month first, every other language here writes day first.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

#: WhatsApp's end-to-end encryption line, per language of the export (the parser reads it as a notice too).
#: It counts most: it is always WhatsApp's, while a person may type an English phrase in a chat in another
#: language.
ENCRYPTION_NOTICES = {
    "English": r"(?:Messages|Your messages|Calls)\b[^:]*\bend-to-end encrypt",
    "German": r"Nachrichten\b[^:]*Ende-zu-Ende-[Vv]erschlüssel",
    "Spanish": r"(?:Los mensajes|Mensajes)\b[^:]*\bextremo a extremo",
    "French": r"Les messages\b[^:]*\bde bout en bout",
    "Portuguese": r"As mensagens\b[^:]*\bponta[ -]a[ -]ponta",
    "Italian": r"I messaggi\b[^:]*\bend-to-end",
    "Dutch": r"Berichten\b[^:]*\bend-to-end",
    "Indonesian": r"Pesan\b[^:]*\b(?:terenkripsi|enkripsi)\b[^:]*\bend-to-end",
}
#: Other phrases only WhatsApp writes: placeholders, deleted markers, attachment markers, group events.
_MARKERS = {
    "English": r"<Media omitted>|\b(?:image|video|audio|sticker|GIF|document) omitted\b|This message was deleted"
               r"|You deleted this message|\(file attached\)|<attached: | created group |changed the subject"
               r"|joined using this group's invite link|changed this group's icon|You were added\b"
               r"|security code (?:with .+ )?changed",
    "German": r"<Medien ausgeschlossen>|\b(?:Bild|Video|Audio|Sticker) weggelassen|Diese Nachricht wurde gelöscht"
              r"|\(Datei angehängt\)|<Anhang: |hat die Gruppe .*erstellt|Sicherheitsnummer",
    "Spanish": r"<Multimedia omitido>|\b(?:imagen|audio|sticker) omitid[oa]|Se eliminó este mensaje"
               r"|Eliminaste este mensaje|\(archivo adjunto\)|<adjunto: |creó el grupo|código de seguridad",
    "French": r"<Médias omis>|\b(?:image|vidéo|audio) absente?|Ce message a été supprimé|\(fichier joint\)"
              r"|a créé le groupe|code de sécurité",
    "Portuguese": r"<Mídia oculta>|<Arquivo de mídia oculto>|\b(?:imagem|áudio|figurinha) ocultad[oa]"
                  r"|Mensagem apagada|\(arquivo anexado\)|criou o grupo|código de segurança",
    "Italian": r"<Media omessi>|\b(?:immagine|audio) omess[oa]|Questo messaggio è stato eliminato"
               r"|\(file allegato\)|ha creato il gruppo|codice di sicurezza",
    "Dutch": r"<Media weggelaten>|\b(?:afbeelding|audio|sticker) weggelaten|Dit bericht is verwijderd"
             r"|\(bestand bijgevoegd\)|heeft de groep .*aangemaakt|beveiligingscode",
    "Indonesian": r"<Media tidak disertakan>|Pesan ini (?:telah )?dihapus|Anda menghapus pesan ini|\(file terlampir\)"
                  r"|<terlampir: |<Pesan ini diedit>|membuat grup|bergabung menggunakan tautan undangan",
}
_NOTICE_RE = {language: re.compile(pattern) for language, pattern in ENCRYPTION_NOTICES.items()}
_MARKER_RE = {language: re.compile(pattern) for language, pattern in _MARKERS.items()}
#: Enough agreeing markers to stop reading (a big chat has a million lines).
_ENOUGH = 5
#: WhatsApp's own lines are short: a longer text is a person's, read only this far (a 5 MB message cost 0.8 s).
_READ_CHARS = 300


def export_language(texts: Iterable[str]) -> tuple[str, str] | None:
    """(language, the words that show it) for the texts after an export's headers, or None.

    The encryption notice decides at once; otherwise the language with the most marker lines."""
    hits: Counter[str] = Counter()
    example: dict[str, str] = {}
    for text in texts:
        text = text[:_READ_CHARS]
        for language, pattern in _NOTICE_RE.items():
            found = pattern.search(text)
            if found:
                return language, f"its encryption notice \"{found.group(0)}…\""
        for language, pattern in _MARKER_RE.items():
            found = pattern.search(text)
            if found:
                hits[language] += 1
                example.setdefault(language, found.group(0).strip())
                if hits[language] >= _ENOUGH:
                    return language, f"WhatsApp's \"{example[language]}\""
    if not hits:
        return None
    language = hits.most_common(1)[0][0]
    return language, f"WhatsApp's \"{example[language]}\""
