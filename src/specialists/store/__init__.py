"""The store: the Record primitive and the kinds of record the project keeps."""
