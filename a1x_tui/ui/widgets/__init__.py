"""The app's widgets. None of them touches a file, a socket or a process: they show messages."""
