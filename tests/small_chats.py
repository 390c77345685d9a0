"""Two small WhatsApp exports for fast chat tests, each line's content chosen for what a test asks.

``LIGHTHOUSE`` is an Android-format group export (``dd/mm/yyyy, hh:mm - Name: text``) of three
people planning a trip in April 2024: a system line, the group's creation, a media placeholder, a
multi-line message, dinner on 3 and 17 April, the cottage booked on 10 April with the ferry time
given three hours later (and another ferry on 24 April, far from it), and a kayak mentioned once.
``JONAS`` is an iOS-format (``[dd/mm/yy, hh:mm:ss] Name: text``) one-to-one chat about a flat hunt
that also talks about dinner and a ferry, so a search of both chats finds both.
"""

from __future__ import annotations

LIGHTHOUSE_TITLE = "Lighthouse trip"
LIGHTHOUSE_PEOPLE = ["Maya", "Daniel", "Priya"]
LIGHTHOUSE = [
    "03/04/2024, 19:40 - Messages and calls are end-to-end encrypted. No one outside of this chat, not even "
    "WhatsApp, can read or listen to them. Tap to learn more.",
    '03/04/2024, 19:41 - Maya created group "Lighthouse trip"',
    "03/04/2024, 19:42 - Maya: Shall we book the lighthouse cottage in Porthleven for the May weekend?",
    "03/04/2024, 19:44 - Daniel: Yes! It sleeps four and has a wood burner",
    "03/04/2024, 19:45 - Priya: Count me in. Who is driving?",
    "03/04/2024, 19:47 - Daniel: I can drive, my car fits three plus the bags",
    "03/04/2024, 21:05 - Maya: Dinner at the noodle bar was lovely tonight, the dumplings were huge",
    "03/04/2024, 21:07 - Priya: Jealous, I had toast",
    "03/04/2024, 21:09 - Daniel: Next time invite us",
    "05/04/2024, 08:15 - Priya: <Media omitted>",
    "05/04/2024, 08:16 - Priya: That is the view from the lighthouse balcony on their website",
    "05/04/2024, 08:20 - Maya: Stunning. I want that view with a coffee",
    "07/04/2024, 14:02 - Daniel: Packing list so far:",
    "walking boots",
    "rain jackets",
    "board games",
    "07/04/2024, 14:05 - Maya: Add sun cream, optimism is free",
    "07/04/2024, 14:06 - Priya: And snacks for the drive",
    "10/04/2024, 09:00 - Priya: I booked the lighthouse cottage, the deposit of 120 pounds is paid",
    "10/04/2024, 09:03 - Maya: Amazing, thank you! I'll send you my share tonight",
    "10/04/2024, 09:04 - Daniel: Same, sending it now",
    "10/04/2024, 09:30 - Priya: The owner says check-in is from four in the afternoon",
    "10/04/2024, 09:31 - Maya: Perfect, we can stop for lunch on the way",
    "10/04/2024, 10:10 - Daniel: Do we want a day trip to the islands as well?",
    "10/04/2024, 10:12 - Maya: Yes please, I have never been",
    "10/04/2024, 12:05 - Daniel: Found it: the ferry to the islands leaves Penzance at 9:15 on Saturday",
    "10/04/2024, 12:07 - Priya: Early but worth it",
    "10/04/2024, 12:09 - Maya: I'll set three alarms",
    "14/04/2024, 18:20 - Daniel: I'll bring the inflatable kayak, the pump is in my garage",
    "14/04/2024, 18:22 - Priya: Do not let Maya steer it",
    "14/04/2024, 18:23 - Maya: Rude. Accurate, but rude",
    "17/04/2024, 19:30 - Daniel: Dinner on Friday at the pizza place by the station?",
    "17/04/2024, 19:32 - Priya: Can't, my sister is visiting",
    "17/04/2024, 19:33 - Maya: Next week then",
    "24/04/2024, 07:55 - Maya: Missed the ferry to work again, the next one leaves at 8:20",
    "24/04/2024, 07:58 - Daniel: Classic Maya",
    "24/04/2024, 08:02 - Priya: Bring a book, it is a long wait",
]
#: Lines of LIGHTHOUSE that are messages (not continuation lines of the packing list).
LIGHTHOUSE_MESSAGES = 34
#: The shorter export ends in the middle of 10 April (at 09:30): the longer one adds the rest of that day.
LIGHTHOUSE_SHORTER = LIGHTHOUSE[:22]
LIGHTHOUSE_SHORTER_MESSAGES = 19

JONAS_TITLE = "Jonas"
JONAS = [
    "[15/04/24, 18:02:11] Jonas: The ferry was cancelled so I'm late for the flat viewing",
    "[15/04/24, 18:03:40] Sam: No worries, the agent is late too",
    "[15/04/24, 18:40:02] Jonas: The flat on Mill Road has a tiny kitchen but a huge balcony",
    "[15/04/24, 18:41:15] Sam: Rent?",
    "[15/04/24, 18:42:30] Jonas: 950 a month, bills not included",
    "[16/04/24, 20:10:05] Sam: Dinner tomorrow to talk about the flats?",
    "[16/04/24, 20:12:47] Jonas: Yes, the dumpling place at seven",
    "[18/04/24, 09:01:00] Jonas: The agent says the Mill Road flat is ours if we sign by Monday",
]
JONAS_MESSAGES = 8


def open_small_library(folder, embedder, config=None):
    """A store in ``folder`` with both chats imported: (conn, the trip's chat id, Jonas's chat id)."""
    from gallery_app.core.chat.chunking import ChunkingConfig
    from gallery_app.core.chat.importer import import_chat
    from gallery_app.core.store import open_store
    from tests.text_embedders import write_chat

    config = config or ChunkingConfig()
    conn = open_store(folder / "gallery.db")
    trip = import_chat(conn, write_chat(folder / "lighthouse_trip", LIGHTHOUSE), embedder, config=config).chat_id
    flat = import_chat(conn, write_chat(folder, JONAS, "WhatsApp Chat with Jonas.txt"), embedder, config=config).chat_id
    return conn, trip, flat
