"""The TOML templates ``a1x_configs.render`` fills in (package data: local_motion, local_joint, cluster)."""
