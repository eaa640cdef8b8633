"""`rekey demo`: the main job end to end on embedded infrastructure, with a before/after view."""
