"""The app's screens: start (runs), wizard, preflight, dashboard, and the modal confirm and help."""
