"""The TOML templates ``configs.render`` fills in (package data: local_motion, local_joint, cluster)."""
