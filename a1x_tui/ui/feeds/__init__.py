"""The app's workers: everything that reads a file, a socket or NVML, off the UI thread.

Each feed runs in a Textual thread worker until its stop event is set, and only talks to the UI by
posting ``a1x_tui.ui.messages``.
"""
