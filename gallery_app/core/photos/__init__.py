"""Photos: decoding, pixel buffers, CLIP pre-processing, indexing and search."""
