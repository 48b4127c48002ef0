"""Stand-in of the recipe's PAI interface: clip ids from standin_clips.json in the data folder (else four)."""

import json
import os

from _record import record


class PhysicalAIAVDatasetLocalInterface:
    def __init__(self, local_dir, clip_index_metadata):
        record("PhysicalAIAVDatasetLocalInterface", local_dir=local_dir, clip_index_metadata=clip_index_metadata)
        self.local_dir = local_dir
        path = os.path.join(local_dir, "standin_clips.json")
        self.clips = ["clip-a", "clip-b", "clip-c", "clip-d"]
        if os.path.exists(path):
            with open(path, encoding="utf-8") as handle:
                self.clips = json.load(handle)

    def get_all_clip_ids(self):
        record("get_all_clip_ids")
        return list(self.clips)
