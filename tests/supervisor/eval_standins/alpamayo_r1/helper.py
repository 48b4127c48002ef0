"""Stand-ins of alpamayo_r1.helper's create_message, get_processor and to_device."""

from _record import record


def create_message(frames):
    record("create_message", type(frames).__name__)
    return [{"role": "user", "content": "frames"}]


class _Processor:
    def apply_chat_template(self, messages, **kwargs):
        record("processor.apply_chat_template", type(messages).__name__, **kwargs)
        return {"input_ids": [[1, 2, 3]]}


def get_processor(tokenizer):
    record("get_processor", tokenizer)
    return _Processor()


def to_device(data, device):
    record("to_device", sorted(data), device)
    return data
