"""The headless core: parsing, storage, models and search. Nothing below here may import Qt."""
