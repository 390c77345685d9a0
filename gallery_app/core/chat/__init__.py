"""Chats: WhatsApp parsing, chunking, import, retrieval, prompts and answers."""
