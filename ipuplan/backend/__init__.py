"""The backend: a FIT plan placed at real addresses on every tile, lowered to codelets and exchanges, packaged."""
